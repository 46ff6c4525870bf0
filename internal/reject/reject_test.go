package reject

import (
	"errors"
	"fmt"
	"regexp"
	"testing"
)

func TestARejectionReadsAsItsMessageAndUnwrapsToIt(t *testing.T) {
	rej := New(BadValue, "body.reward", "body key %s must be a number, got %s", "reward", "map")
	wrapped := fmt.Errorf("push: %w", rej)

	got, ok := errors.AsType[*Rejection](wrapped)
	switch {
	case !ok || got != rej:
		t.Fatalf("errors.AsType did not find the rejection in %v", wrapped)
	case rej.Error() != "body key reward must be a number, got map":
		t.Fatalf("Error() = %q", rej.Error())
	case rej.Reason != BadValue || rej.Field != "body.reward":
		t.Fatalf("reason %q field %q", rej.Reason, rej.Field)
	case errors.Unwrap(rej) != rej.Err:
		t.Fatal("Unwrap does not give Err")
	}
}

// The codes are attribute values on the exporter's own counters: they stay
// snake_case and each means one thing.
func TestEveryReasonCodeIsDistinctAndSnakeCase(t *testing.T) {
	codes := []Reason{
		NoStep, BadStep, NonFinite, BadValue, NoValues, BadWorkType, BadBody,
		NoIdentity, RunClosed, RunRefused, NoTeam, Unauthorized, RunLimit, NoKey, KeyRefused, PlatformRejected, EpisodeTooLarge, UploadRejected,
		RunKind, Eval, OffCadence, EmptyTrajectory, AlreadyDelivered, AlreadySent, NotAnEvent,
		AmbientNoRun, AmbientKeyCap, ScrapeFailed, AmbientRunEnded,
	}
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[Reason]bool{}
	for _, c := range codes {
		if !snake.MatchString(string(c)) || seen[c] {
			t.Errorf("reason %q is not a distinct snake_case code", c)
		}
		seen[c] = true
	}
}
