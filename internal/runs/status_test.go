package runs

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/primeintellect/primeexporter/primestatusextension"
)

// The root's RunStatus hands Registry.Status's state to the prime_status
// route as it is, so each state must be spelled as the route spells it.
func TestTheRegistrysStatesAreTheRoutes(t *testing.T) {
	for _, pair := range [][2]string{
		{StateUnknown, primestatusextension.StateUnknown},
		{StatePending, primestatusextension.StatePending},
		{StateRunning, primestatusextension.StateRunning},
		{StateClosing, primestatusextension.StateClosing},
		{StateClosed, primestatusextension.StateClosed},
		{StateRefused, primestatusextension.StateRefused},
	} {
		assert.Equal(t, pair[1], pair[0])
	}
}
