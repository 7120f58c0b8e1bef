package session

import "testing"

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	seed := int64(42)
	got := replayCommand([]string{"faultline", "run", "--provider=kind"}, "/runs/power off/scenario.yaml", map[string]string{"b": "x y", "a": "it's"}, &seed)
	want := `faultline run --provider=kind '/runs/power off/scenario.yaml' --set 'a=it'\''s' --set 'b=x y' --seed=42`
	if got != want {
		t.Errorf("replay\n got %s\nwant %s", got, want)
	}
}
