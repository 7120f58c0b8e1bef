package kind

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// freezer answers `docker pause` with runc's "unable to freeze" its first
// fails times, then with err.
type freezer struct {
	fails, tries int
	err          error
}

func (f *freezer) Run(_ context.Context, args ...string) ([]byte, error) {
	f.tries++
	if f.tries <= f.fails {
		return nil, &DockerError{Args: args, Err: errors.New("exit status 1"),
			Stderr: "Error response from daemon: Cannot pause container c: OCI runtime pause failed: unable to freeze: unknown"}
	}
	return nil, f.err
}

func TestPause(t *testing.T) {
	defer func(b wait.Backoff) { freezeRetry = b }(freezeRetry)
	freezeRetry = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}
	gone := &DockerError{Args: []string{"pause", "c"}, Err: errors.New("exit status 1"), Stderr: "Error: No such container: c"}
	for _, tc := range []struct {
		name      string
		f         freezer
		wantTries int
		wantErr   string
	}{
		{"frozen at once", freezer{}, 1, ""},
		{"frozen at the third try", freezer{fails: 2}, 3, ""},
		{"never frozen", freezer{fails: 10}, 4, "unable to freeze: unknown (tried 4 times)"},
		{"other errors are not retried", freezer{err: gone}, 1, "No such container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Pause(context.Background(), &tc.f, "c")
			if tc.f.tries != tc.wantTries {
				t.Errorf("docker pause ran %d times, want %d", tc.f.tries, tc.wantTries)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}
