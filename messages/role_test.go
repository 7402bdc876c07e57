package messages

import "testing"

func TestRoleOf(t *testing.T) {
	for _, tc := range []struct {
		m     UIMessage
		first bool
		want  Role
	}{
		{UIMessage{Type: TypeSay, Say: SayText}, true, RoleUser},
		{UIMessage{Type: TypeSay, Say: SayText}, false, RoleAssistant},
		{UIMessage{Type: TypeSay, Say: SayText, Decision: &Decision{Tool: "execute_code", Allowed: true}}, false, RoleTool},
		{UIMessage{Type: TypeSay, Say: SayToolResult}, false, RoleTool},
		{UIMessage{Type: TypeSay, Say: SayAPIReqFinished}, false, RoleMeta},
		{UIMessage{Type: TypeAsk, Ask: AskCommand}, false, RoleTool},
	} {
		if got := RoleOf(tc.m, tc.first); got != tc.want {
			t.Errorf("RoleOf(%s/%s decision=%v) = %s, want %s", tc.m.Say, tc.m.Ask, tc.m.Decision != nil, got, tc.want)
		}
	}
}
