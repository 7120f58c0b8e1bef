package lab

import "github.com/faultline-dev/faultline/providers/lab/labconfig"

// Profile is the lab's clock (labconfig.Profile).
type Profile = labconfig.Profile

// DefaultProfile is the profile a lab uses unless told otherwise.
const DefaultProfile = labconfig.DefaultProfile

// ProfileNamed is the profile of that name, or an error listing them.
func ProfileNamed(name string) (Profile, error) { return labconfig.ProfileNamed(name) }
