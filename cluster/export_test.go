package cluster

// Done is the bucket's revision of the last change m's watch has handled.
func (m *Mirror) Done() uint64 { return m.done.Load() }
