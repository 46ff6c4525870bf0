package telemetry

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheTenantsThatLoseTheMostAreNamedAndTheRestAreOther(t *testing.T) {
	l := NewLabels(2)
	assert.Equal(t, "alice", l.Of("alice", 5))
	assert.Equal(t, "bob", l.Of("bob", 1))
	assert.Equal(t, Other, l.Of("carol", 1), "as much as the least named: not named")
	assert.Equal(t, "carol", l.Of("carol", 5), "carol now loses more than bob: she takes his place")
	assert.Equal(t, Other, l.Of("bob", 1))
	assert.Equal(t, "alice", l.Of("alice", 1))
	assert.Equal(t, Unknown, l.Of("", 3), "no tenant could be told")
}

func TestHowManyTenantsEverLoseRecordsTheLabelsStayBounded(t *testing.T) {
	l := NewLabels(3)
	seen := map[string]bool{}
	for i := range 20_000 {
		seen[l.Of(fmt.Sprintf("user-%d", i), 1+i%7)] = true
	}
	assert.LessOrEqual(t, len(l.counts), maxTracked, "counts kept")
	named := 0
	for label := range seen {
		if label != Other {
			named++
		}
	}
	assert.Contains(t, seen, Other)
	assert.LessOrEqual(t, len(l.named), 3)
	assert.Greater(t, named, 3, "the named changed as bigger losers came")
	assert.LessOrEqual(t, named, 6, "at most twice as many names as named at once are ever given: the counter's series stay bounded")
}
