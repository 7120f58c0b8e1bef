package management

import (
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/providers/lab/labconfig"
)

// TestCheckUpgrade: an upgrade goes from any stack to a newer
// release, the compiled stack's included; the same stack and an older one
// (clusterctl does not downgrade) are refused, each saying why.
func TestCheckUpgrade(t *testing.T) {
	stack := func(name string) labconfig.Stack {
		s, err := labconfig.ParseRelease(name).Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		from, to, want string
	}{
		{"v1.12", "v1.13", ""},
		{"v1.12", "v1.13-processes", ""},
		{"v1.13-processes", "v1.13", ""},
		{"v1.12", "v1.12", "already runs"},
		{"v1.13-processes", "v1.12", "clusterctl does not downgrade"},
		{"v1.13", "v1.14", ""},
		{"v1.11", "v1.12", ""},
		{"v1.11", "v1.13", ""},
		{"v1.13", "v1.12", "clusterctl does not downgrade"},
	} {
		err := (&Plane{stack: stack(tc.from)}).checkUpgrade(stack(tc.to))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s -> %s: %v", tc.from, tc.to, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s -> %s: got %v, want an error saying %q", tc.from, tc.to, err, tc.want)
		}
	}
}
