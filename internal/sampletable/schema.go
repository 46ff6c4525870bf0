package sampletable

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The table's columns (rft-api.md "The training sample table"), in order.
const (
	colRunID           = "run_id"
	colStep            = "step"
	colTag             = "tag"
	colProblemID       = "problem_id"
	colSampleID        = "sample_id"
	colPrompt          = "prompt"
	colCompletion      = "completion"
	colTrajectory      = "trajectory"
	colAnswer          = "answer"
	colEnvName         = "env_name"
	colTask            = "task"
	colInfo            = "info"
	colReward          = "reward"
	colAdvantage       = "advantage"
	colMetrics         = "metrics"
	colTiming          = "timing"
	colNumInputTokens  = "num_input_tokens"
	colNumOutputTokens = "num_output_tokens"
	colCreatedAt       = "created_at"
)

// Schema is the sample table's Arrow schema: 19 columns in the viewer's
// order, every one nullable (pyarrow's default, which the Python SDK wrote),
// created_at in UTC microseconds.
func Schema() *arrow.Schema {
	utf8 := arrow.BinaryTypes.String
	i64 := arrow.PrimitiveTypes.Int64
	f64 := arrow.PrimitiveTypes.Float64
	field := func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		field(colRunID, utf8),
		field(colStep, i64),
		field(colTag, utf8),
		field(colProblemID, i64),
		field(colSampleID, i64),
		field(colPrompt, utf8),
		field(colCompletion, utf8),
		field(colTrajectory, utf8),
		field(colAnswer, utf8),
		field(colEnvName, utf8),
		field(colTask, utf8),
		field(colInfo, utf8),
		field(colReward, f64),
		field(colAdvantage, f64),
		field(colMetrics, utf8),
		field(colTiming, utf8),
		field(colNumInputTokens, i64),
		field(colNumOutputTokens, i64),
		field(colCreatedAt, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}),
	}, nil)
}

// writerProperties are pyarrow's settings the viewer was built against:
// snappy, dictionary encoding on (free text falls back to PLAIN by itself
// once the dictionary page fills), column statistics on.
func writerProperties() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
	)
}

// arrowWriterProperties store the Arrow schema in the file, as pyarrow
// does, so Arrow readers get the timestamp's time zone back exactly.
func arrowWriterProperties() pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
}
