package rft

import (
	"strings"
	"testing"
)

func TestNormalizeBaseURLGivesTheSamePrefixForEverySpellingOfTheBase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://h", "https://h/api/v1"},
		{"https://h/", "https://h/api/v1"},
		{"https://h/api/v1", "https://h/api/v1"},
		{"https://h/api/v1/", "https://h/api/v1"},
		{"https://h/api/v1/rft", "https://h/api/v1"},
		{"https://h/api/v1/rft/", "https://h/api/v1"},
		{"https://h/api/internal/rft", "https://h/api/internal"},
		{"https://h/api/internal", "https://h/api/internal"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v1"},
		{"https://h/rft", "https://h/api/v1"},
		{"https://h/proxy", "https://h/proxy/api/v1"},
		{"https://h/proxy/api/v1/rft", "https://h/proxy/api/v1"},
		{"  https://api.primeintellect.ai  ", "https://api.primeintellect.ai/api/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeBaseURL(tt.in)
			if err != nil {
				t.Fatalf("NormalizeBaseURL(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeBaseURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeBaseURLRefusesValuesThatAreNotAbsoluteHTTPURLsAndSaysWhy(t *testing.T) {
	tests := []struct{ in, problem string }{
		{"", "is empty"},
		{"   ", "is empty"},
		{"api.primeintellect.ai", "has no scheme"},
		{"localhost:8080", "has no scheme"},
		{"/api/v1", "has no scheme"},
		{"ftp://h", `scheme "ftp" is not http or https`},
		{"https://", "has no host"},
		{"https://h?x=1", "query string"},
		{"https://h/#frag", "fragment"},
		{"https://user:hunter2@h", "credentials"},
		{"https://h/%zz", "not a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := NormalizeBaseURL(tt.in)
			if err == nil {
				t.Fatalf("NormalizeBaseURL(%q) succeeded", tt.in)
			}
			if _, ok := err.(*BaseURLError); !ok {
				t.Errorf("error is %T, want *BaseURLError", err)
			}
			if !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("error %q does not say %q", err, tt.problem)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}
