package ambient

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// AttrAmbient marks a resource as ambient: true, or a non-empty string
// naming its source ("host", "gpu", "inference"); false or "false" marks
// it as a trainer's, whatever its scopes.
const AttrAmbient = "prime.ambient"

// ScopeName is the scope translated metrics are kept in.
const ScopeName = "prime.ambient"

// receiverScopes are the scope name prefixes of the receivers that sample
// where a run executes rather than what it computes.
var receiverScopes = [...]string{
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver",
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver",
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kubeletstatsreceiver",
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/dockerstatsreceiver",
}

// Is tells whether rm is ambient: its prime.ambient attribute says so, or,
// without one, every scope it has is a host or scrape receiver's (or the
// already translated ScopeName).
func Is(rm pmetric.ResourceMetrics) bool {
	if v, ok := rm.Resource().Attributes().Get(AttrAmbient); ok {
		switch v.Type() {
		case pcommon.ValueTypeBool:
			return v.Bool()
		case pcommon.ValueTypeStr:
			s := v.Str()
			return s != "" && s != "false"
		}
		return true
	}
	sms := rm.ScopeMetrics()
	if sms.Len() == 0 {
		return false
	}
	for _, sm := range sms.All() {
		if !receiverScope(sm.Scope().Name()) {
			return false
		}
	}
	return true
}

func receiverScope(name string) bool {
	if name == ScopeName {
		return true
	}
	for _, p := range receiverScopes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
