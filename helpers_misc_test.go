package primeexporter

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
)

func attributeKey(k string) attribute.Key { return attribute.Key(k) }

func toString(v any) string { return fmt.Sprint(v) }
