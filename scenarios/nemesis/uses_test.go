package nemesis

import "testing"

// TestEveryKindDeclaresItsFields: a kind that declares no target field
// could never be aimed, so every registered kind declares what it reads.
func TestEveryKindDeclaresItsFields(t *testing.T) {
	for _, k := range Kinds() {
		u, ok := KindUses(k)
		if !ok || len(u.Fields) == 0 {
			t.Errorf("%s declares no fields", k)
		}
	}
}
