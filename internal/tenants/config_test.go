package tenants

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

func TestEveryRuleAGatewayBreaksIsNamedByItsKey(t *testing.T) {
	broken := Config{Enabled: true, Limits: LimitsConfig{Limit: Limit{BytesPerSecond: -1, RecordsPerSecond: math.NaN()}}}
	err := broken.Validate(Rest{Mode: "offline", APIKey: true})
	for _, key := range []string{"mode: online (got offline)", "api_key", "tenants::max_open_runs", "tenants::max_tenants", "tenants::key_ttl", "tenants::named_in_metrics",
		"tenants::limits::bytes_per_second", "tenants::limits::records_per_second", "tenants::limits::burst_seconds", "tenants::limits::reload_interval"} {
		assert.ErrorContains(t, err, key)
	}
	broken.Enabled = false
	assert.NoError(t, broken.Validate(Rest{Mode: "offline", APIKey: true}), "a single-key exporter has no gateway rules")
	ok := Config{Enabled: true, MaxOpenRuns: 1, MaxTenants: 1, KeyTTL: time.Second, NamedInMetrics: 1, Limits: unlimited}
	assert.NoError(t, ok.Validate(Rest{Mode: "online"}), "a rate of 0 is no limit")
}

// batched is a sending queue that batches, partitioned by keys.
func batched(keys ...string) configoptional.Optional[exporterhelper.QueueBatchConfig] {
	q := exporterhelper.NewDefaultQueueConfig()
	b := exporterhelper.NewDefaultBatchConfig()
	b.Partition.MetadataKeys = keys
	q.Batch = configoptional.Some(b)
	return configoptional.Some(q)
}

func TestAGatewaysQueueIsPartitionedBySenderKeyAndOnlyAGateways(t *testing.T) {
	gateway, single := Config{Enabled: true}, Config{}
	unbatched := configoptional.Some(exporterhelper.NewDefaultQueueConfig())
	unbatched.Get().Batch = configoptional.None[exporterhelper.BatchConfig]()
	for _, tt := range []struct {
		name string
		c    Config
		q    configoptional.Optional[exporterhelper.QueueBatchConfig]
		want []string // the partition's keys; nil without batching
	}{
		{"a gateway's batches", gateway, batched("x-team"), []string{"x-team", "authorization"}},
		{"a gateway's batches already by the key, in any case", gateway, batched("Authorization"), []string{"Authorization"}},
		{"a gateway without batching", gateway, unbatched, nil},
		{"a single key's batches", single, batched("x-team"), []string{"x-team"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			written := tt.q.Get().Batch.Get()
			var before []string
			if written != nil {
				before = append(before, written.Partition.MetadataKeys...)
			}
			partitioned := tt.c.Queue(tt.q)
			got := partitioned.Get().Batch.Get()
			if tt.want == nil {
				require.Nil(t, got)
				return
			}
			assert.Equal(t, tt.want, got.Partition.MetadataKeys)
			assert.Equal(t, before, written.Partition.MetadataKeys, "the user's config is left as it was")
		})
	}
	none := gateway.Queue(configoptional.None[exporterhelper.QueueBatchConfig]())
	assert.False(t, none.HasValue(), "no queue stays none")
}
