package trainerlib

import "testing"

func TestEndpointsAreHostPortOrAnHTTPURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Endpoint
	}{
		{"localhost:4318", Endpoint{HostPort: "localhost:4318", Insecure: true}},
		{"http://collector:4318", Endpoint{HostPort: "collector:4318", Insecure: true}},
		{"https://collector:4318/otlp/", Endpoint{HostPort: "collector:4318", BasePath: "/otlp"}},
	} {
		got, err := ParseEndpoint(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != map[bool]string{true: "http", false: "https"}[tc.want.Insecure]+"://"+tc.want.HostPort+tc.want.BasePath {
			t.Errorf("%q prints as %s", tc.in, got)
		}
	}
	for _, bad := range []string{"", "grpc://collector:4317", "localhost:4318/v1", "http://"} {
		if got, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) = %+v, want an error", bad, got)
		}
	}
}
