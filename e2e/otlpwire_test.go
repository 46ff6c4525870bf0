package e2e

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file reads recorded OTLP/HTTP protobuf bodies with protowire alone,
// independently of the pdata the collector decodes them with, so that what
// a replay test expects comes from the bytes on the wire and not from the
// code under test. It reads the parts the prime exporter uses: resources,
// gauge and sum points, and log records; other metric types are an error.

// wireKV is one OTLP KeyValue; a kvlist keeps its order.
type wireKV struct {
	Key   string
	Value any // nil (empty AnyValue), string, bool, int64, float64, []byte, []any, []wireKV
}

// wireRecord is one log record with its resource.
type wireRecord struct {
	Resource  []wireKV
	EventName string
	Time      uint64 // time_unix_nano
	Observed  uint64 // observed_time_unix_nano
	Attrs     []wireKV
	Body      any
}

// wirePoint is one gauge or sum data point with its resource and metric.
type wirePoint struct {
	Resource []wireKV
	Metric   string
	Attrs    []wireKV
	Time     uint64
	Value    float64
}

// wireField is one protobuf field: a varint or fixed value in V, a
// length-delimited one in B.
type wireField struct {
	Num protowire.Number
	V   uint64
	B   []byte
}

func wireFields(b []byte) ([]wireField, error) {
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := wireField{Num: num}
		switch typ {
		case protowire.VarintType:
			f.V, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			f.V, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.V = uint64(v)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(b)
		default:
			return nil, fmt.Errorf("field %d: wire type %d", num, typ)
		}
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// wireEach calls fn for every length-delimited field num of b.
func wireEach(b []byte, num protowire.Number, fn func([]byte) error) error {
	fs, err := wireFields(b)
	if err != nil {
		return err
	}
	for _, f := range fs {
		if f.Num == num {
			if err := fn(f.B); err != nil {
				return err
			}
		}
	}
	return nil
}

// AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array, 6 kvlist, 7 bytes.
func wireAnyValue(b []byte) (any, error) {
	fs, err := wireFields(b)
	if err != nil {
		return nil, err
	}
	var v any
	for _, f := range fs {
		switch f.Num {
		case 1:
			v = string(f.B)
		case 2:
			v = f.V != 0
		case 3:
			v = int64(f.V)
		case 4:
			v = math.Float64frombits(f.V)
		case 5:
			arr := []any{}
			err = wireEach(f.B, 1, func(e []byte) error {
				x, err := wireAnyValue(e)
				arr = append(arr, x)
				return err
			})
			v = arr
		case 6:
			v, err = wireKVList(f.B, 1)
		case 7:
			v = f.B
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// wireKVList reads the KeyValue fields num of b (KeyValue: 1 key, 2 value).
func wireKVList(b []byte, num protowire.Number) ([]wireKV, error) {
	out := []wireKV{}
	err := wireEach(b, num, func(kv []byte) error {
		fs, err := wireFields(kv)
		if err != nil {
			return err
		}
		var e wireKV
		for _, f := range fs {
			switch f.Num {
			case 1:
				e.Key = string(f.B)
			case 2:
				if e.Value, err = wireAnyValue(f.B); err != nil {
					return err
				}
			}
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// wireResource reads a Resource (1 attributes) out of field num of b.
func wireResource(b []byte, num protowire.Number) ([]wireKV, error) {
	var attrs []wireKV
	err := wireEach(b, num, func(r []byte) (err error) {
		attrs, err = wireKVList(r, 1)
		return err
	})
	return attrs, err
}

// decodeWireLogs reads an ExportLogsServiceRequest: 1 ResourceLogs {1
// resource, 2 ScopeLogs {2 LogRecord}}. LogRecord: 1 time, 11 observed time,
// 5 body, 6 attributes, 12 event_name.
func decodeWireLogs(body []byte) ([]wireRecord, error) {
	var out []wireRecord
	err := wireEach(body, 1, func(rl []byte) error {
		res, err := wireResource(rl, 1)
		if err != nil {
			return err
		}
		return wireEach(rl, 2, func(sl []byte) error {
			return wireEach(sl, 2, func(lr []byte) error {
				fs, err := wireFields(lr)
				if err != nil {
					return err
				}
				r := wireRecord{Resource: res}
				for _, f := range fs {
					switch f.Num {
					case 1:
						r.Time = f.V
					case 11:
						r.Observed = f.V
					case 5:
						r.Body, err = wireAnyValue(f.B)
					case 12:
						r.EventName = string(f.B)
					}
					if err != nil {
						return err
					}
				}
				if r.Attrs, err = wireKVList(lr, 6); err != nil {
					return err
				}
				out = append(out, r)
				return nil
			})
		})
	})
	return out, err
}

// decodeWireMetrics reads an ExportMetricsServiceRequest: 1 ResourceMetrics
// {1 resource, 2 ScopeMetrics {2 Metric}}. Metric: 1 name, 5 gauge, 7 sum
// (each 1 NumberDataPoint: 7 attributes, 3 time, 4 as_double, 6 as_int);
// 9, 10 and 11 (histograms, summaries) are refused: no fixture has them.
func decodeWireMetrics(body []byte) ([]wirePoint, error) {
	var out []wirePoint
	err := wireEach(body, 1, func(rm []byte) error {
		res, err := wireResource(rm, 1)
		if err != nil {
			return err
		}
		return wireEach(rm, 2, func(sm []byte) error {
			return wireEach(sm, 2, func(m []byte) error {
				fs, err := wireFields(m)
				if err != nil {
					return err
				}
				name := ""
				var points [][]byte
				for _, f := range fs {
					switch f.Num {
					case 1:
						name = string(f.B)
					case 5, 7:
						if err := wireEach(f.B, 1, func(p []byte) error { points = append(points, p); return nil }); err != nil {
							return err
						}
					case 9, 10, 11:
						return fmt.Errorf("metric %q: field %d (a histogram or summary) is not read by this decoder", name, f.Num)
					}
				}
				for _, p := range points {
					pfs, err := wireFields(p)
					if err != nil {
						return err
					}
					pt := wirePoint{Resource: res, Metric: name}
					for _, f := range pfs {
						switch f.Num {
						case 3:
							pt.Time = f.V
						case 4:
							pt.Value = math.Float64frombits(f.V)
						case 6:
							pt.Value = float64(int64(f.V))
						}
					}
					if pt.Attrs, err = wireKVList(p, 7); err != nil {
						return err
					}
					out = append(out, pt)
				}
				return nil
			})
		})
	})
	return out, err
}

// wireGet is the value of key in kvs, and whether it is there.
func wireGet(kvs []wireKV, key string) (any, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// wireJSON turns a wire value into what encoding/json gives for the same
// JSON (maps, []any, float64 numbers), for comparing JSON columns by value.
func wireJSON(v any) any {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = wireJSON(e)
		}
		return out
	case []wireKV:
		out := make(map[string]any, len(v))
		for _, kv := range v {
			out[kv.Key] = wireJSON(kv.Value)
		}
		return out
	default:
		return v
	}
}
