package main

import (
	"go.opentelemetry.io/otel/attribute"
)

// episodeBody is an episode's native document as a prime.episode body, as a
// map or as JSON text. An evaluation has no steps, so the record carries no
// prime.work.step, and the document no run.work: every episode is a sample.
func episodeBody(doc object, jsonBody bool) attribute.Value {
	if jsonBody {
		return attribute.StringValue(string(jsonText(doc)))
	}
	return attrValue(doc)
}

// summaryBody is the user's summary keys as the body of a prime.metrics
// event; an evaluation has no step, so there is no prime.step.
func summaryBody(s []summaryValue) attribute.Value {
	kvs := make([]attribute.KeyValue, len(s))
	for i, v := range s {
		kvs[i] = attribute.KeyValue{Key: attribute.Key(v.name), Value: attrValue(v.value)}
	}
	return attribute.MapValue(kvs...)
}
