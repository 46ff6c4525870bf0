package rft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestStatusCodesMapToTheirClasses(t *testing.T) {
	tests := []struct {
		code int
		want Class
	}{
		{400, ClassRejected},
		{401, ClassUnauthorized},
		{403, ClassForbidden},
		{404, ClassNotFound},
		{409, ClassConflict},
		{413, ClassRejected},
		{422, ClassRejected},
		{429, ClassThrottled},
		{500, ClassGateway},
		{502, ClassGateway},
		{503, ClassThrottled},
		{504, ClassGateway},
		{507, ClassGateway},
		{307, ClassProtocol},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			// Through a real call, on a replayable route with one attempt.
			srv := newFakeServer(t, always(reply{status: tt.code}))
			c, _ := newTestClient(t, srv.URL, func(o *Options) { o.MaxAttempts = 1 })
			e := mustError(t, c.Confirm(context.Background(), "run-1", 1, "k"))
			if e.Class != tt.want || e.StatusCode != tt.code {
				t.Errorf("%d: got %v (%d), want %v", tt.code, e.Class, e.StatusCode, tt.want)
			}
		})
	}
}

func TestErrorPredicatesFollowTheClass(t *testing.T) {
	tests := []struct {
		class                Class
		code                 int
		retryable, ambiguous bool
	}{
		{ClassTransportUnsent, 0, true, false},
		{ClassTransportAmbiguous, 0, true, true},
		{ClassThrottled, 429, true, false},
		{ClassThrottled, 503, true, true},
		{ClassGateway, 502, true, true},
		{ClassGateway, 504, true, true},
		{ClassGateway, 500, true, true},
		{ClassRejected, 400, false, false},
		{ClassUnauthorized, 401, false, false},
		{ClassForbidden, 403, false, false},
		{ClassNotFound, 404, false, false},
		{ClassConflict, 409, false, false},
		{ClassProtocol, 201, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v %d", tt.class, tt.code), func(t *testing.T) {
			e := &Error{Op: opConfirm, Class: tt.class, StatusCode: tt.code}
			if e.Retryable() != tt.retryable || e.Permanent() == tt.retryable || e.Ambiguous() != tt.ambiguous {
				t.Errorf("Retryable=%v Permanent=%v Ambiguous=%v, want %v %v %v",
					e.Retryable(), e.Permanent(), e.Ambiguous(), tt.retryable, !tt.retryable, tt.ambiguous)
			}
		})
	}
}

func TestEveryClassHasAName(t *testing.T) {
	seen := map[string]Class{}
	for c := ClassTransportUnsent; c <= ClassProtocol; c++ {
		s := c.String()
		if strings.HasPrefix(s, "Class(") {
			t.Errorf("class %d has no name", int(c))
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("classes %d and %d are both %q", prev, c, s)
		}
		seen[s] = c
	}
}

func TestAForbiddenCreateSaysSoPlainly(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 403, body: `{"detail": "External training runs are not enabled for this team"}`}))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	e := mustError(t, err)
	want := "prime: create run: 403 Forbidden: External training runs are not enabled for this team"
	if e.Error() != want {
		t.Errorf("got  %q\nwant %q", e.Error(), want)
	}
	if !e.Permanent() || e.Class != ClassForbidden {
		t.Errorf("class %v, permanent %v", e.Class, e.Permanent())
	}
}

func TestErrorMessageCarriesThePlatformsMessageInEitherShape(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"fastapi detail", `{"detail":"Run not found"}`, "Run not found"},
		{"error object", `{"error":{"code":"invalid_step","message":"step must be >= 0"}}`, "step must be >= 0 (invalid_step)"},
		{"fastapi validation list", `{"detail":[{"loc":["body","max_steps"],"msg":"field required","type":"value_error.missing"}]}`, "body.max_steps: field required"},
		{"plain text", "upstream\n  overloaded", "upstream overloaded"},
		{"html page", "<html><body><h1>502</h1></body></html>", ""},
		{"other json", `{"foo": 1}`, `{"foo":1}`},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 400, body: tt.body}))
			c, _ := newTestClient(t, srv.URL)
			e := mustError(t, c.Confirm(context.Background(), "run-1", 1, "k"))
			if e.Message != tt.want {
				t.Errorf("Message = %q, want %q", e.Message, tt.want)
			}
		})
	}
}

func TestErrorMessageIsBoundedHoweverLargeTheBody(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 400, body: `{"detail":"` + strings.Repeat("é", 3<<20) + `"}`}))
	c, _ := newTestClient(t, srv.URL)
	e := mustError(t, c.Confirm(context.Background(), "run-1", 1, "k"))
	if len(e.Message) > maxMessage+len("…") {
		t.Errorf("message is %d bytes", len(e.Message))
	}
	if !strings.HasSuffix(e.Message, "…") || strings.ContainsRune(e.Message, '\uFFFD') {
		t.Errorf("message was not clipped on a rune boundary: %q", e.Message[len(e.Message)-10:])
	}
}

func TestTheKeyNeverAppearsInAnyErrorString(t *testing.T) {
	// A platform that echoes the key back in every shape it could.
	echo := `{"detail":"bad key ` + testKey + `"}`
	cases := []struct {
		name string
		rep  reply
		want Class
	}{
		{"400", reply{status: 400, body: echo}, ClassRejected},
		{"401", reply{status: 401, body: `{"error":{"code":"` + testKey + `","message":"Bearer ` + testKey + `"}}`}, ClassUnauthorized},
		{"403", reply{status: 403, body: echo}, ClassForbidden},
		{"404", reply{status: 404, body: "no such key " + testKey}, ClassNotFound},
		{"409", reply{status: 409, body: echo}, ClassConflict},
		{"429", reply{status: 429, body: echo}, ClassThrottled},
		{"502", reply{status: 502, body: echo}, ClassGateway},
		{"redirect", reply{status: 302, header: map[string]string{"Location": "https://x/" + testKey + "?k=" + testKey}}, ClassProtocol},
		{"protocol", reply{status: 201, body: `{"` + testKey + `":{"` + testKey + `":1}}`}, ClassProtocol},
		{"ambiguous", reply{hijack: true}, ClassTransportAmbiguous},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(tt.rep))
			c, _ := newTestClient(t, srv.URL, func(o *Options) { o.MaxAttempts = 1 })
			_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: testKey, TeamID: testKey})
			e := mustError(t, err)
			if e.Class != tt.want {
				t.Errorf("class %v, want %v", e.Class, tt.want)
			}
			assertNoKey(t, e)
		})
	}
	t.Run("unsent", func(t *testing.T) {
		c, _ := newTestClient(t, "http://"+closedAddr(t), func(o *Options) { o.MaxAttempts = 1 })
		_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: testKey, TeamID: testKey})
		e := mustError(t, err)
		if e.Class != ClassTransportUnsent {
			t.Errorf("class %v", e.Class)
		}
		assertNoKey(t, e)
	})
	t.Run("refused before sending", func(t *testing.T) {
		c, _ := newTestClient(t, "http://127.0.0.1:1")
		e := mustError(t, c.PostMetrics(context.Background(), "run-1", map[string]float64{testKey: 1, "x": -1 / zero()}))
		assertNoKey(t, e)
	})
}

func zero() float64 { return 0 }

func assertNoKey(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) {
			t.Errorf("%T error holds the key: %q", e, e)
		}
	}
	if s := fmt.Sprintf("%+v %#v", err, err); strings.Contains(s, testKey) {
		t.Errorf("formatted error holds the key: %s", s)
	}
}

func TestAsErrorFindsTheErrorThroughWrapping(t *testing.T) {
	inner := &Error{Op: opFinalize, Class: ClassGateway, StatusCode: 502}
	got, ok := AsError(fmt.Errorf("close run: %w", inner))
	if !ok || got != inner {
		t.Errorf("AsError = %v, %v", got, ok)
	}
	if _, ok := AsError(io.EOF); ok {
		t.Error("AsError found an *Error in io.EOF")
	}
}

func TestErrorTextNamesTheOperationTheAttemptsAndTheCause(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{Op: opPostMetrics, Class: ClassTransportUnsent, Err: dial, Attempts: 5},
			"prime: post metrics: request not sent: dial tcp: connect: connection refused (after 5 attempts)"},
		{&Error{Op: opCreateRun, Class: ClassTransportAmbiguous, Err: io.EOF, Attempts: 1},
			"prime: create run: no usable response, the request may have been processed: EOF"},
		{&Error{Op: opSetStatus, Class: ClassThrottled, StatusCode: 429, RetryAfter: time.Second, Attempts: 2},
			"prime: set status: 429 Too Many Requests (after 2 attempts)"},
		{&Error{Op: opPostMetrics, Class: ClassRejected, Message: "non-finite values (NaN or ±Inf) for loss"},
			"prime: post metrics: not sent: non-finite values (NaN or ±Inf) for loss"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
	if !errors.Is(tests[1].e, io.EOF) {
		t.Error("Unwrap does not reach the transport error")
	}
}
