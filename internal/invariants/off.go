//go:build !invariants

package invariants

// Enabled is false: a production build.
const Enabled = false
