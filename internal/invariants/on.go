//go:build invariants

package invariants

// Enabled is true: this build checks the invariants.
const Enabled = true
