package runstatus

import (
	"go.opentelemetry.io/collector/component"

	"github.com/primeintellect/primeexporter/primestatusextension"
)

// extension is the prime_status extension as a Source uses it.
type extension interface {
	RegisterRunStatusSource(primestatusextension.Source) (unregister func())
}

// Register makes src a source of every status extension host has; the
// func it returns undoes that.
func Register(host component.Host, src primestatusextension.Source) (unregister func()) {
	var undo []func()
	for _, ext := range host.GetExtensions() {
		if x, ok := ext.(extension); ok {
			undo = append(undo, x.RegisterRunStatusSource(src))
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
