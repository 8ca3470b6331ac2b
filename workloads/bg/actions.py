"""The 11 BG actions and the tracked data items they read or write (paper section C)."""

from enum import IntEnum


class Action(IntEnum):
    VP = 0  # View Profile
    LF = 1  # List Friends
    VFR = 2  # View Friend Requests
    IF = 3  # Invite Friend
    AFR = 4  # Accept Friend Request
    RFR = 5  # Reject Friend Request
    TF = 6  # Thaw Friendship
    VTR = 7  # View Top-K Resources
    VCR = 8  # View Comments on a Resource
    PCR = 9  # Post Comment on a Resource
    DCR = 10  # Delete Comment from a Resource


WRITE_ACTIONS = frozenset({Action.IF, Action.AFR, Action.RFR, Action.TF, Action.PCR, Action.DCR})

ACTION_NAMES = {
    Action.VP: "View Profile",
    Action.LF: "List Friends",
    Action.VFR: "View Friend Requests",
    Action.IF: "Invite Friend",
    Action.AFR: "Accept Friend Request",
    Action.RFR: "Reject Friend Request",
    Action.TF: "Thaw Friendship",
    Action.VTR: "View Top-K Resources",
    Action.VCR: "View Comments on a Resource",
    Action.PCR: "Post Comment on a Resource",
    Action.DCR: "Delete Comment from a Resource",
}


class Item(IntEnum):
    """Kinds of tracked data items whose value the validator checks."""

    FRIEND_COUNT = 0  # a member's confirmed friends
    PENDING_COUNT = 1  # a member's pending invitations received
    RESOURCE_COUNT = 2  # resources posted on a member's wall
    COMMENT_COUNT = 3  # comments on a resource


ITEM_NAMES = {
    Item.FRIEND_COUNT: "friend count",
    Item.PENDING_COUNT: "pending count",
    Item.RESOURCE_COUNT: "resource count",
    Item.COMMENT_COUNT: "comment count",
}
