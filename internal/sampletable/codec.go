package sampletable

import (
	"io"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
)

// fastSnappy is Snappy at its standard speed. arrow-go's own Snappy codec
// compresses with s2's "better" mode, which spent half the exporter's CPU
// on long episodes for a few percent of size; the output is plain Snappy
// either way, which every Parquet reader decodes. Decoding is arrow-go's.
type fastSnappy struct{ compress.Codec }

func (fastSnappy) Encode(dst, src []byte) []byte { return s2.EncodeSnappy(dst, src) }

func (fastSnappy) EncodeLevel(dst, src []byte, _ int) []byte { return s2.EncodeSnappy(dst, src) }

func (fastSnappy) NewWriter(w io.Writer) io.WriteCloser {
	return s2.NewWriter(w, s2.WriterSnappyCompat())
}

func (f fastSnappy) NewWriterLevel(w io.Writer, _ int) (io.WriteCloser, error) {
	return f.NewWriter(w), nil
}

// arrow-go keeps its codecs in a process-wide registry that is only safe
// to change before any goroutine reads it: at init.
func init() {
	orig, err := compress.GetCodec(compress.Codecs.Snappy)
	if err == nil {
		compress.RegisterCodec(compress.Codecs.Snappy, fastSnappy{Codec: orig})
	}
}
