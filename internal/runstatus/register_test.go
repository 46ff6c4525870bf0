package runstatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/primeintellect/primeexporter/primestatusextension"
)

// statusExtension counts the sources registered with it.
type statusExtension struct {
	component.StartFunc
	component.ShutdownFunc
	sources int
}

func (x *statusExtension) RegisterRunStatusSource(primestatusextension.Source) func() {
	x.sources++
	return func() { x.sources-- }
}

// otherExtension is an extension that is not a status extension.
type otherExtension struct {
	component.StartFunc
	component.ShutdownFunc
}

type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

func TestASourceIsRegisteredWithEveryStatusExtensionUntilUndone(t *testing.T) {
	a, b := &statusExtension{}, &statusExtension{}
	h := host{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{
		component.MustNewID("prime_status"):              a,
		component.MustNewIDWithName("prime_status", "2"): b,
		component.MustNewID("other"):                     otherExtension{},
	}}
	undo := Register(h, Source{Disabled: true})
	assert.Equal(t, 1, a.sources)
	assert.Equal(t, 1, b.sources)
	undo()
	assert.Zero(t, a.sources)
	assert.Zero(t, b.sources)
}
