package adaptbot

// AutoRepair says what the server does on its own once a tool keeps
// failing (ADAPTBOT_AUTO_REPAIR).
type AutoRepair string

// The modes of automatic repair.
const (
	// AutoRepairOff: never.
	AutoRepairOff AutoRepair = "off"
	// AutoRepairPropose: a repair is proposed as a pending version, never
	// served without a person's approval.
	AutoRepairPropose AutoRepair = "propose"
	// AutoRepairOn: a repair that passes everything serves (unless review
	// is on).
	AutoRepairOn AutoRepair = "on"
)
