package runs

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestAnAmbientResourceNamesItsRunByIdentityButNeverByItsInstanceID(t *testing.T) {
	g := &Registry{cfg: Config{}}
	res := pcommon.NewResource()
	res.Attributes().PutStr(AttrServiceInstance, "127.0.0.1:9400")
	if got := g.AmbientKey(res); got != "" {
		t.Fatalf("a scrape target's instance id named run %q", got)
	}
	res.Attributes().PutStr(AttrRunKey, "r1")
	if got, want := g.AmbientKey(res), (identity{source: AttrRunKey, value: "r1"}).key(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	g.cfg.Defaults.ID = "run-7"
	if got, want := g.AmbientKey(pcommon.NewResource()), (identity{source: "run.id", value: "run-7", attach: true}).key(); got != want {
		t.Fatalf("a sidecar's run.id: got %q, want %q", got, want)
	}
}

func TestARunTakesItsFirstAmbientKeysUpToTheCapAndNoneAfter(t *testing.T) {
	var c keyCap
	for _, k := range []string{"a", "b", "a"} {
		if !c.admit(k, 2) {
			t.Fatalf("%s refused under the cap", k)
		}
	}
	if c.admit("c", 2) {
		t.Fatal("a third key passed a cap of 2")
	}
	if !c.admit("b", 2) {
		t.Fatal("a key already taken was refused at the cap")
	}
	c.reset()
	if !c.admit("c", 2) {
		t.Fatal("a reset run refused a key")
	}
}
