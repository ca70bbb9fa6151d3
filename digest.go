package adaptbot

import (
	"crypto/sha256"
	"encoding/hex"
)

// Digest is the SHA-256 of b in hex: the one name of a tool version's
// source, of a bundle's file, and of anything else kept by its content.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
