package runstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestARunKeyReadsBackAsTheAttributeItsKindComesFrom(t *testing.T) {
	for _, tc := range []struct {
		kind, value string
		eval        bool
		key, name   string
		attach      bool
	}{
		{kind: KindAttached, value: "r1", key: "id\x00r1", name: `prime.run.id="r1"`, attach: true},
		{kind: KindRunKey, value: "a", key: "key\x00a", name: `prime.run.key="a"`},
		{kind: KindInstance, value: "i-1", key: "instance\x00i-1", name: `service.instance.id="i-1"`},
		{kind: KindAttached, value: "e", eval: true, key: "eval\x00id\x00e", name: `evaluation prime.run.id="e"`, attach: true},
		{kind: "other", value: "x", key: "other\x00x", name: `"other\x00x"`},
	} {
		key := RunKey(tc.kind, tc.value, tc.eval)
		assert.Equal(t, tc.key, key, "the key of kind %q", tc.kind)
		assert.Equal(t, tc.name, runName(key), "a log line names the run of %q", key)
		if _, value, attach, ok := keyIdentity(key); ok {
			assert.Equal(t, tc.value, value)
			assert.Equal(t, tc.attach, attach, "only an id attaches")
		}
	}
}
