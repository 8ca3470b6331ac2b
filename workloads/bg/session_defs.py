"""BG's step vocabulary and its 8 sessions (paper section D) as data
(bgbench.workloads.sessions). The steps themselves are in workloads/bg/sessions.py.

Every step is one action by the socialite `a`; its targets are chosen from BG's own
picture of the fragment (never from the store's answers), once per session, and kept
for the steps after it:

- "VP(self)", "VTR(self)", "LF(self)", "VFR(self)": View Profile, View Top-K Resources,
  List Friends and View Friend Requests of `a` itself.
- "VP(friend)", "VTR(friend)", "LF(friend)": the same on the session's friend, a random
  confirmed friend of `a` picked at the first of these steps; no friend: the session ends.
- "VP(member)", "VTR(member)", "LF(member)": the same on the session's member, drawn from
  the Zipfian distribution at the first step that needs it.
- "VCR(resource)", "PCR(resource)": View Comments on, Post a Comment on, the session's
  resource: a random resource on the wall of the session's member (drawn if no step drew
  one yet), picked once; a wall without resources ends the session.
- "VCR(own comment)": reserve a comment on a resource of `a`'s own wall (once: later
  steps keep it) and View Comments on its resource; no comment ends the session.
  "DCR(own comment)": delete the reserved comment (reserving one first if there is none
  yet, or the one reserved was deleted already). A comment reserved and not deleted when
  the session ends is given back.
- "IF": invite a member `a` has no relationship with; "AFR", "RFR": accept, reject a
  pending invitation to `a`; "TF": thaw one of `a`'s friendships. Nobody to act on ends
  the session.
"""

from bgbench.workloads.sessions import SessionDef

STEP_NAMES = (
    "VP(self)",
    "VTR(self)",
    "LF(self)",
    "VFR(self)",
    "VP(friend)",
    "VTR(friend)",
    "LF(friend)",
    "VP(member)",
    "VTR(member)",
    "LF(member)",
    "VCR(resource)",
    "PCR(resource)",
    "VCR(own comment)",
    "DCR(own comment)",
    "IF",
    "AFR",
    "RFR",
    "TF",
)

# Every session opens with the socialite looking at its own page.
_SELF = {"VP(self)": {"next": "VTR(self)"}}

_DEFINITIONS: dict[str, dict[str, object]] = {
    "ViewSelfProfileSession": {
        "states": {**_SELF, "VTR(self)": {}},
    },
    "ViewFrdProfileSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "LF(self)"},
            "LF(self)": {"next": "VP(friend)"},
            "VP(friend)": {"next": "VTR(friend)"},
            "VTR(friend)": {},
        },
    },
    "PostCmtOnResSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "VP(member)"},
            "VP(member)": {"next": "VTR(member)"},
            "VTR(member)": {"next": "VCR(resource)"},
            "VCR(resource)": {"next": "PCR(resource)"},
            "PCR(resource)": {"next": "VCR(resource) again"},
            "VCR(resource) again": {"step": "VCR(resource)"},
        },
    },
    "DeleteCmtOnResSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "VCR(own comment)"},
            "VCR(own comment)": {"next": "DCR(own comment)"},
            "DCR(own comment)": {"next": "VCR(own comment) again"},
            "VCR(own comment) again": {"step": "VCR(own comment)"},
        },
    },
    "InviteFrdSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "LF(self)"},
            "LF(self)": {"next": "IF"},
            "IF": {"next": "VFR(self)"},
            "VFR(self)": {},
        },
    },
    "AcceptFrdReqSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "LF(self)"},
            "LF(self)": {"next": "VFR(self)"},
            "VFR(self)": {"next": "AFR"},
            "AFR": {"next": "VFR(self) again"},
            "VFR(self) again": {"step": "VFR(self)", "next": "LF(self) again"},
            "LF(self) again": {"step": "LF(self)"},
        },
    },
    "RejectFrdReqSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "LF(self)"},
            "LF(self)": {"next": "VFR(self)"},
            "VFR(self)": {"next": "RFR"},
            "RFR": {"next": "VFR(self) again"},
            "VFR(self) again": {"step": "VFR(self)", "next": "LF(self) again"},
            "LF(self) again": {"step": "LF(self)"},
        },
    },
    "ThawFrdshipSession": {
        "states": {
            **_SELF,
            "VTR(self)": {"next": "LF(self)"},
            "LF(self)": {"next": "TF"},
            "TF": {"next": "LF(self) again"},
            "LF(self) again": {"step": "LF(self)"},
        },
    },
}

BUILTIN_SESSIONS: dict[str, SessionDef] = {
    name: SessionDef.model_validate(definition) for name, definition in _DEFINITIONS.items()
}
