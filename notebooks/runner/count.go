package runner

// cloneInt copies an optional execution count.
func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	return new(*p)
}
