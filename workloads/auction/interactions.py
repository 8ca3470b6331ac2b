"""Auction's interactions as steps of sessions (the vocabulary of session_defs.py).

Each step is Strudel's prepare/execute/complete (5.1) over one `Visit`, the session's
state: prepare picks the target and the parameters from what the session saw (the
current item, the max bid it saw), execute is one timed store call (a transaction under
the workload's retry policy for the writes), and complete records what the answer
taught the session (the item a listing chose, the max bid a lost bid met) and returns
the step's result: True, an outcome label, or False/None to end the session.
"""

from collections.abc import Awaitable, Callable, Iterable, Mapping
from random import Random
from time import monotonic_ns
from typing import Any, Protocol, TypeVar

from bgbench import sdk
from bgbench.sdk import NEVER, WRITE_ABS, Timer, UnitContext
from bgbench.sdk import transactions as tx
from bgbench.workloads.auction import session_defs as labels
from bgbench.workloads.auction.generator import item_key
from bgbench.workloads.auction.picture import (
    BID_COUNT,
    BIDDER_BIDS,
    BIDS_SEEN,
    BUYER_PURCHASES,
    MAX_BID,
    QUANTITY,
    SELLER_AUCTION_ITEMS,
    SELLER_SALE_ITEMS,
    Picture,
)
from bgbench.workloads.auction.session_defs import INTERACTIONS
from bgbench.workloads.auction.store import (
    AsyncAuctionConnection,
    AuctionItem,
    Bid,
    BidAnswer,
    ItemWithBids,
    Purchase,
    PurchaseAnswer,
    SaleItem,
)
from bgbench.workloads.sessions import Step

R = TypeVar("R")
AuctionContext = UnitContext[Timer[AsyncAuctionConnection]]

# Action codes: an interaction's index in INTERACTIONS
(SELL_AUCTION_ITEM, SELL_SALE_ITEM, STORE_BID, BUY_SALE_ITEM, VIEW_AUCTION_ITEM, VIEW_SALE_ITEM,
 VIEW_AUCTION_ITEMS_BY_SELLER, VIEW_SALE_ITEMS_BY_SELLER, VIEW_BIDS_BY_BIDDER,
 VIEW_WINNING_BIDS_BY_BIDDER, VIEW_PURCHASES_BY_BUYER) = range(len(INTERACTIONS))  # fmt: skip
PICKS = 8  # sellers drawn before a step needing an item gives up


class Tainted(Protocol):
    uncertain: bool


class Host(Protocol):
    """What the steps need of the player running them (workload.AuctionPlayer)."""

    retry: tx.RetryPolicy
    think_s: float
    bid_step: int
    buy_most: int
    sale_quantity: int

    @property
    def picture(self) -> Picture: ...
    @property
    def fragment(self) -> Tainted: ...
    def draw(self) -> int: ...
    def pick_item(self, items: Mapping[int, list[int]]) -> tuple[int, int] | None: ...
    def new_title(self, rng: Random) -> str: ...


class Visit:
    """One session's state: its user and the current items of interest (None: not chosen
    yet) with what the session saw of them."""

    __slots__ = ("auction", "player", "sale", "seen_left", "seen_max", "unit", "user")

    def __init__(self, player: Host, unit: AuctionContext, user: int) -> None:
        self.player = player
        self.unit = unit
        self.user = user
        self.auction: tuple[int, int] | None = None  # (seller, item_no)
        self.seen_max = 0  # the highest bid (or the initial price) seen on it, cents
        self.sale: tuple[int, int] | None = None
        self.seen_left = 0  # units seen left of the current sale item

    async def pause(self, seconds: float | None) -> bool:
        return await self.unit.pause(self.player.think_s if seconds is None else seconds)

    def choose_auction(self, item: AuctionItem) -> None:
        self.auction = (item.seller, item.item_no)
        self.seen_max = max(item.max_bid, item.initial_price)

    def choose_sale(self, item: SaleItem) -> None:
        self.sale = (item.seller, item.item_no)
        self.seen_left = item.quantity

    def the_auction_item(self) -> tuple[int, int] | None:
        """The current auction item, or one drawn from the fragment if there is none yet
        (a Zipfian seller's, from the workload's picture)."""
        if self.auction is None:
            picked = self.player.pick_item(self.player.picture.auction)
            if picked is not None:
                self.auction = picked
                key = item_key(*picked)
                picture = self.player.picture
                self.seen_max = max(picture.max_bid.get(key, 0), picture.price.get(key, 0))
        return self.auction

    def the_sale_item(self) -> tuple[int, int] | None:
        if self.sale is None:
            picked = self.player.pick_item(self.player.picture.sale)
            if picked is not None:
                self.sale = picked
                self.seen_left = self.player.picture.quantity.get(item_key(*picked), 0)
        return self.sale


def _settled(v: Visit, outcome: tx.TxOutcome[Any], label: object) -> object:
    """A step's result from its transaction's outcome: `label` when it committed, GAVE_UP
    when every attempt was refused, False (end the session) otherwise; an unknown outcome
    leaves the fragment uncertain."""
    if outcome.status == tx.COMMITTED:
        return label
    if outcome.status == tx.ABORTED:
        return labels.GAVE_UP
    if outcome.status == tx.FAILED:
        v.player.fragment.uncertain = True
    return False


# -- writes ------------------------------------------------------------------------------


async def sell_auction_item(v: Visit) -> object:
    p, user = v.player, v.user
    rng: Random = v.unit.rng
    title, price = p.new_title(rng), 100 + rng.randrange(10_000)
    listed = ((SELLER_AUCTION_ITEMS, user, 1),)
    outcome = await v.unit.transaction(
        SELL_AUCTION_ITEM,
        lambda: v.unit.timer.conn.sell_auction_item(user, title, price),
        p.retry,
        changes=lambda _: listed,
        if_unknown=listed,
    )
    if outcome.answer is not None:
        p.picture.sold_auction_item(user, outcome.answer, price)
        v.choose_auction(AuctionItem(user, outcome.answer, title, price, 0, -1, 0))
    return _settled(v, outcome, True)


async def sell_sale_item(v: Visit) -> object:
    p, user = v.player, v.user
    rng: Random = v.unit.rng
    title, price = p.new_title(rng), 100 + rng.randrange(10_000)
    quantity = 1 + rng.randrange(p.sale_quantity)

    def changes(item_no: int) -> Iterable[sdk.Item]:
        return ((SELLER_SALE_ITEMS, user, 1), (QUANTITY, item_key(user, item_no), quantity))

    outcome = await v.unit.transaction(
        SELL_SALE_ITEM,
        lambda: v.unit.timer.conn.sell_sale_item(user, title, price, quantity),
        p.retry,
        changes=changes,
        if_unknown=((SELLER_SALE_ITEMS, user, 1),),
    )
    if outcome.answer is not None:
        p.picture.sold_sale_item(user, outcome.answer, quantity)
        v.choose_sale(SaleItem(user, outcome.answer, title, price, quantity))
    return _settled(v, outcome, True)


async def store_bid(v: Visit) -> object:
    target = v.the_auction_item()
    if target is None:
        return None
    p, u, bidder = v.player, v.unit, v.user
    seller, item_no = target
    key = item_key(seller, item_no)
    amount = v.seen_max + 1 + u.rng.randrange(p.bid_step)  # prepare: from the max seen
    began = [0]  # the committed attempt's start: the max bid is logged over it

    async def attempt() -> BidAnswer:
        began[0] = monotonic_ns()
        answer: BidAnswer = await u.timer.conn.store_bid(seller, item_no, bidder, amount)
        return answer

    def observed(a: BidAnswer) -> Iterable[sdk.Item]:
        return ((MAX_BID, key, a.max_bid_before), (BID_COUNT, key, a.bid_count_before))

    stored = ((BID_COUNT, key, 1), (BIDS_SEEN, key, 1), (BIDDER_BIDS, bidder, 1))
    outcome = await u.transaction(
        STORE_BID,
        attempt,
        p.retry,
        observed,
        lambda a: stored if a.bid_no >= 0 else (),
        if_unknown=stored,
    )
    new_max = ((MAX_BID, key, amount),)
    answer = outcome.answer
    if answer is None:
        if outcome.status == tx.FAILED:  # it may have won: the max may be the amount
            u.timer.log(WRITE_ABS, STORE_BID, began[0], NEVER, u.sid, new_max)
        return _settled(v, outcome, labels.LOST)
    if answer.bid_no < 0:  # complete: outbid; the next bid starts from the max it met
        v.seen_max = max(v.seen_max, answer.max_bid_before)
        return labels.LOST
    u.timer.log(WRITE_ABS, STORE_BID, began[0], monotonic_ns(), u.sid, new_max)
    p.picture.bid_stored(key, bidder, amount)
    v.seen_max = amount
    return labels.WON


async def buy_sale_item(v: Visit) -> object:
    target = v.the_sale_item()
    if target is None:
        return None
    p, u, buyer = v.player, v.unit, v.user
    seller, item_no = target
    key = item_key(seller, item_no)
    quantity = 1 + u.rng.randrange(max(1, min(p.buy_most, v.seen_left)))
    taken = ((QUANTITY, key, -quantity), (BUYER_PURCHASES, buyer, 1))
    outcome = await u.transaction(
        BUY_SALE_ITEM,
        lambda: u.timer.conn.buy_sale_item(seller, item_no, buyer, quantity),
        p.retry,
        lambda a: ((QUANTITY, key, a.quantity_before),),
        lambda a: taken if a.purchase_no >= 0 else (),
        if_unknown=taken,
    )
    answer: PurchaseAnswer | None = outcome.answer
    if answer is None:
        return _settled(v, outcome, labels.SOLD_OUT)
    if answer.purchase_no < 0:
        v.seen_left = answer.quantity_before
        return labels.SOLD_OUT
    p.picture.bought(key, buyer, quantity)
    v.seen_left = answer.quantity_before - quantity
    return labels.BOUGHT


# -- reads -------------------------------------------------------------------------------


async def view_auction_item(v: Visit) -> object:
    target = v.the_auction_item()
    if target is None:
        return None
    key = item_key(*target)

    def seen(a: ItemWithBids) -> Iterable[sdk.Item]:
        item = a.item
        return ((BID_COUNT, key, item.bid_count), (BIDS_SEEN, key, len(a.bids)),
                (MAX_BID, key, item.max_bid))  # fmt: skip

    answer = await v.unit.read(VIEW_AUCTION_ITEM, v.unit.timer.conn.auction_item(*target), seen)
    if answer is None:
        return False
    v.choose_auction(answer.item)
    return True


async def view_sale_item(v: Visit) -> object:
    target = v.the_sale_item()
    if target is None:
        return None
    key = item_key(*target)
    answer = await v.unit.read(
        VIEW_SALE_ITEM,
        v.unit.timer.conn.sale_item(*target),
        lambda a: ((QUANTITY, key, a.quantity),),
    )
    if answer is None:
        return False
    v.choose_sale(answer)
    return True


async def view_auction_items_by_seller(v: Visit) -> object:
    seller = v.player.draw()
    answer = await v.unit.read(
        VIEW_AUCTION_ITEMS_BY_SELLER,
        v.unit.timer.conn.auction_items_by_seller(seller),
        lambda items: ((SELLER_AUCTION_ITEMS, seller, len(items)),),
    )
    if answer is None:
        return False
    if not answer:
        return labels.EMPTY
    v.choose_auction(v.unit.rng.choice(answer))  # complete: the item of interest
    return True


async def view_sale_items_by_seller(v: Visit) -> object:
    seller = v.player.draw()
    answer = await v.unit.read(
        VIEW_SALE_ITEMS_BY_SELLER,
        v.unit.timer.conn.sale_items_by_seller(seller),
        lambda items: ((SELLER_SALE_ITEMS, seller, len(items)),),
    )
    if answer is None:
        return False
    if not answer:
        return labels.EMPTY
    v.choose_sale(v.unit.rng.choice(answer))
    return True


def _bids_seen(user: int) -> Callable[[list[tuple[Bid, AuctionItem]]], Iterable[sdk.Item]]:
    return lambda bids: ((BIDDER_BIDS, user, len(bids)),)


async def _bids(v: Visit, code: int, bids: Awaitable[list[tuple[Bid, AuctionItem]]]) -> object:
    observed = _bids_seen(v.user) if code == VIEW_BIDS_BY_BIDDER else None
    answer = await v.unit.read(code, bids, observed)
    if answer is None:
        return False
    if not answer:
        return labels.EMPTY
    v.choose_auction(v.unit.rng.choice(answer)[1])
    return True


async def view_bids_by_bidder(v: Visit) -> object:
    return await _bids(v, VIEW_BIDS_BY_BIDDER, v.unit.timer.conn.bids_by_bidder(v.user))


async def view_winning_bids_by_bidder(v: Visit) -> object:
    conn = v.unit.timer.conn
    return await _bids(v, VIEW_WINNING_BIDS_BY_BIDDER, conn.winning_bids_by_bidder(v.user))


async def view_purchases_by_buyer(v: Visit) -> object:
    user = v.user

    def seen(purchases: list[tuple[Purchase, SaleItem]]) -> Iterable[sdk.Item]:
        return ((BUYER_PURCHASES, user, len(purchases)),)

    conn = v.unit.timer.conn
    answer = await v.unit.read(VIEW_PURCHASES_BY_BUYER, conn.purchases_by_buyer(user), seen)
    if answer is None:
        return False
    if not answer:
        return labels.EMPTY
    v.choose_sale(v.unit.rng.choice(answer)[1])
    return True


async def home(v: Visit) -> object:
    return True


STEPS: dict[str, Step[Visit]] = {
    "HOME": home,
    "SELL_AUCTION_ITEM": sell_auction_item,
    "SELL_SALE_ITEM": sell_sale_item,
    "STORE_BID": store_bid,
    "BUY_SALE_ITEM": buy_sale_item,
    "VIEW_AUCTION_ITEM": view_auction_item,
    "VIEW_SALE_ITEM": view_sale_item,
    "VIEW_AUCTION_ITEMS_BY_SELLER": view_auction_items_by_seller,
    "VIEW_SALE_ITEMS_BY_SELLER": view_sale_items_by_seller,
    "VIEW_BIDS_BY_BIDDER": view_bids_by_bidder,
    "VIEW_WINNING_BIDS_BY_BIDDER": view_winning_bids_by_bidder,
    "VIEW_PURCHASES_BY_BUYER": view_purchases_by_buyer,
}
