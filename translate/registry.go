package translate

// Registry returns every step the relay knows, oldest change first. Each
// step lives in its own file with its description, its lossy/lossless claim
// and a sibling test; chains are built from this list (never an N×N table).
func Registry() []*Step {
	return []*Step{}
}
