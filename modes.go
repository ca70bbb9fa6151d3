package adaptbot

import (
	"fmt"
	"strings"
)

// Mode says how far the server goes on its own in one area of learning
// from use: automatic repairs (ADAPTBOT_AUTO_REPAIR) and skills proposed
// from recurring chains of tools (ADAPTBOT_SKILLS). The zero Mode is off,
// wherever it is read; a setting left empty takes its default instead,
// which the settings table says.
type Mode string

// The modes.
const (
	// ModeOff: never.
	ModeOff Mode = "off"
	// ModePropose: what the server makes waits as a pending version, never
	// served without a person's approval.
	ModePropose Mode = "propose"
	// ModeOn: what the server makes serves once it passes everything
	// (unless review is on).
	ModeOn Mode = "on"
)

// On reports whether m does anything: propose or on.
func (m Mode) On() bool { return m == ModePropose || m == ModeOn }

// ParseMode reads a mode as written: off, propose or on, in any case; the
// empty string is off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeOff, nil
	case ModeOff, ModePropose, ModeOn:
		return m, nil
	}
	return "", fmt.Errorf("use %s, %s, %s", ModeOff, ModePropose, ModeOn)
}
