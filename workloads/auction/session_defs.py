"""Auction's interactions, their outcome labels, and its built-in sessions as data
(bgbench.workloads.sessions). The steps themselves are in interactions.py.

Every interaction but HOME is one action of the session's user. They share the session
state (Strudel 5.1's prepare/execute/complete): a listing chooses the "current item of
interest" among what it returned, and the steps after it act on that item:

- "HOME": the hub of Strudel's Figure 6; no store call.
- "SELL_AUCTION_ITEM", "SELL_SALE_ITEM": the user sells a new item; it becomes the
  current auction (sale) item.
- "VIEW_AUCTION_ITEMS_BY_SELLER", "VIEW_SALE_ITEMS_BY_SELLER": the items of a seller drawn
  from the user's fragment (Zipfian); one of them becomes the current item. Outcome
  "empty" when the seller sells none.
- "VIEW_AUCTION_ITEM": the current auction item with its bids (one drawn from the
  fragment if the session has none yet); remembers its max bid. "VIEW_SALE_ITEM": the
  current sale item; remembers the quantity left.
- "STORE_BID": the user bids on the current auction item, the max bid it saw plus 1 to
  `bid_step` cents (Strudel Figure 4, one transaction under the retry policy). Outcome
  "won" (the bid is the item's max bid now), "lost" (another bid got there first: not
  above the max bid when it ran), "gave_up" (every attempt was refused).
- "BUY_SALE_ITEM": the user buys 1 to `buy_most` units of the current sale item (no more
  than it saw left). Outcome "bought", "sold_out" (too few left), "gave_up".
- "VIEW_BIDS_BY_BIDDER", "VIEW_WINNING_BIDS_BY_BIDDER": the user's bids (the winning ones)
  with their items; one item becomes the current auction item. "empty" when none.
- "VIEW_PURCHASES_BY_BUYER": the user's purchases with their sale items; one becomes the
  current sale item. "empty" when none.

A step with nothing to act on ends the session; so does a failed store call.
"""

from bgbench.workloads.sessions import SessionDef

INTERACTIONS = (
    "SELL_AUCTION_ITEM",
    "SELL_SALE_ITEM",
    "STORE_BID",
    "BUY_SALE_ITEM",
    "VIEW_AUCTION_ITEM",
    "VIEW_SALE_ITEM",
    "VIEW_AUCTION_ITEMS_BY_SELLER",
    "VIEW_SALE_ITEMS_BY_SELLER",
    "VIEW_BIDS_BY_BIDDER",
    "VIEW_WINNING_BIDS_BY_BIDDER",
    "VIEW_PURCHASES_BY_BUYER",
)
STEP_NAMES = ("HOME", *INTERACTIONS)

# Outcome labels a step may return (a state's `on` picks transitions by them)
EMPTY, WON, LOST, BOUGHT, SOLD_OUT, GAVE_UP = (
    "empty",
    "won",
    "lost",
    "bought",
    "sold_out",
    "gave_up",
)

_HOME = {"next": "HOME"}

_DEFINITIONS: dict[str, dict[str, object]] = {
    # Strudel's Figure 6: a walk from HOME over every interaction, back to HOME after each
    # (or on to the item a listing chose), with outcomes: a lost bid looks at the item
    # again (and may bid higher), a sold-out item sends the user back to the listing.
    "Strudel": {
        "states": {
            "HOME": {
                "next": {
                    "SELL_AUCTION_ITEM": 0.1,
                    "SELL_SALE_ITEM": 0.05,
                    "VIEW_AUCTION_ITEMS_BY_SELLER": 0.25,
                    "VIEW_SALE_ITEMS_BY_SELLER": 0.15,
                    "VIEW_BIDS_BY_BIDDER": 0.1,
                    "VIEW_WINNING_BIDS_BY_BIDDER": 0.1,
                    "VIEW_PURCHASES_BY_BUYER": 0.05,
                    "end": 0.2,
                }
            },
            "SELL_AUCTION_ITEM": _HOME,
            "SELL_SALE_ITEM": _HOME,
            "VIEW_AUCTION_ITEMS_BY_SELLER": {
                "next": {"VIEW_AUCTION_ITEM": 0.8, "HOME": 0.2},
                "on": {EMPTY: "HOME"},
            },
            "VIEW_AUCTION_ITEM": {"next": {"STORE_BID": 0.5, "HOME": 0.5}},
            "STORE_BID": {"next": "HOME", "on": {LOST: {"VIEW_AUCTION_ITEM": 0.6, "HOME": 0.4}}},
            "VIEW_SALE_ITEMS_BY_SELLER": {
                "next": {"VIEW_SALE_ITEM": 0.8, "HOME": 0.2},
                "on": {EMPTY: "HOME"},
            },
            "VIEW_SALE_ITEM": {"next": {"BUY_SALE_ITEM": 0.5, "HOME": 0.5}},
            "BUY_SALE_ITEM": {
                "next": "HOME",
                "on": {SOLD_OUT: {"VIEW_SALE_ITEMS_BY_SELLER": 0.5, "HOME": 0.5}},
            },
            "VIEW_BIDS_BY_BIDDER": {
                "next": {"VIEW_AUCTION_ITEM": 0.5, "HOME": 0.5},
                "on": {EMPTY: "HOME"},
            },
            "VIEW_WINNING_BIDS_BY_BIDDER": _HOME,
            "VIEW_PURCHASES_BY_BUYER": _HOME,
        },
    },
    # Looks for an item, bids until it wins or gives up, then checks its bids.
    "Bidder": {
        "states": {
            "VIEW_AUCTION_ITEMS_BY_SELLER": {"next": "VIEW_AUCTION_ITEM", "on": {EMPTY: "end"}},
            "VIEW_AUCTION_ITEM": {"next": "STORE_BID"},
            "STORE_BID": {
                "next": "VIEW_BIDS_BY_BIDDER",
                "on": {LOST: {"VIEW_AUCTION_ITEM": 0.7, "end": 0.3}},
            },
            "VIEW_BIDS_BY_BIDDER": {"next": "VIEW_WINNING_BIDS_BY_BIDDER"},
            "VIEW_WINNING_BIDS_BY_BIDDER": {},
        },
    },
    # Looks for a sale item and buys; sold out: back to a listing, or leaves.
    "Buyer": {
        "states": {
            "VIEW_SALE_ITEMS_BY_SELLER": {"next": "VIEW_SALE_ITEM", "on": {EMPTY: "end"}},
            "VIEW_SALE_ITEM": {"next": "BUY_SALE_ITEM"},
            "BUY_SALE_ITEM": {
                "next": "VIEW_PURCHASES_BY_BUYER",
                "on": {SOLD_OUT: {"VIEW_SALE_ITEMS_BY_SELLER": 0.5, "end": 0.5}},
            },
            "VIEW_PURCHASES_BY_BUYER": {},
        },
    },
    # Sells one item of each kind and looks at each (the item sold is the current one).
    "Seller": {
        "states": {
            "SELL_AUCTION_ITEM": {"next": "VIEW_AUCTION_ITEM"},
            "VIEW_AUCTION_ITEM": {"next": "SELL_SALE_ITEM"},
            "SELL_SALE_ITEM": {"next": "VIEW_SALE_ITEM"},
            "VIEW_SALE_ITEM": {},
        },
    },
    # Only reads.
    "Browser": {
        "states": {
            "VIEW_AUCTION_ITEMS_BY_SELLER": {
                "next": "VIEW_AUCTION_ITEM",
                "on": {EMPTY: "VIEW_SALE_ITEMS_BY_SELLER"},
            },
            "VIEW_AUCTION_ITEM": {
                "next": {"VIEW_SALE_ITEMS_BY_SELLER": 0.5, "VIEW_BIDS_BY_BIDDER": 0.5}
            },
            "VIEW_SALE_ITEMS_BY_SELLER": {"next": "VIEW_SALE_ITEM", "on": {EMPTY: "end"}},
            "VIEW_SALE_ITEM": {},
            "VIEW_BIDS_BY_BIDDER": {"next": "VIEW_WINNING_BIDS_BY_BIDDER"},
            "VIEW_WINNING_BIDS_BY_BIDDER": {"next": "VIEW_PURCHASES_BY_BUYER"},
            "VIEW_PURCHASES_BY_BUYER": {},
        },
    },
}

BUILTIN_SESSIONS: dict[str, SessionDef] = {
    name: SessionDef.model_validate(definition) for name, definition in _DEFINITIONS.items()
}
