"""A blocking in-memory Auction binding for unit tests of the workload's units: the
protocol's semantics over dicts, with hooks to script what other users did meanwhile
(`outbid`: before the next store_bid, another bidder raises the item's max bid) and
what the store refuses (`refuse`: causes of the next attempts) or fails at."""

from collections.abc import Callable
from typing import Any

from bgbench import sdk
from bgbench.workloads.auction.store import (
    AuctionItem,
    Bid,
    BidAnswer,
    ItemWithBids,
    Purchase,
    PurchaseAnswer,
    SaleItem,
)

OTHER_BIDDER = 10**6


class MemoryAuction:
    """The store and a connection to it at once (one thread)."""

    def __init__(self) -> None:
        self.next_item_no: dict[int, int] = {}
        self.items: dict[tuple[int, int], AuctionItem] = {}
        self.bids: dict[tuple[int, int], list[Bid]] = {}
        self.sales: dict[tuple[int, int], SaleItem] = {}
        self.purchases: dict[tuple[int, int], list[Purchase]] = {}
        self.outbid = 0  # store_bid calls to precede by another bidder's bid
        self.refuse: list[sdk.AbortCause] = []  # causes of the next refused attempts
        self.fail_next = False  # the next write raises: an unknown outcome

    # -- loading (what load_fragment does) ---------------------------------------------
    def load(self, data: Any) -> None:
        for u in data.user_ids():
            self.next_item_no[u] = 0
        for batch in data.auction_item_batches():
            for item, bids in batch:
                key = (item.seller, item.item_no)
                self.items[key], self.bids[key] = item, list(bids)
                self.next_item_no[item.seller] = max(
                    self.next_item_no[item.seller], item.item_no + 1
                )
        for sales in data.sale_item_batches():
            for sale in sales:
                key = (sale.seller, sale.item_no)
                self.sales[key], self.purchases[key] = sale, []
                self.next_item_no[sale.seller] = max(
                    self.next_item_no[sale.seller], sale.item_no + 1
                )

    def _attempt(self) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("the store went away mid-commit")
        if self.refuse:
            raise sdk.Abort(self.refuse.pop(0), "scripted")

    # -- writes ----------------------------------------------------------------------
    def _sell(self, seller: int, make: Callable[[int], None]) -> int:
        self._attempt()
        item_no = self.next_item_no[seller]
        self.next_item_no[seller] = item_no + 1
        make(item_no)
        return item_no

    def sell_auction_item(self, seller: int, title: str, initial_price: int) -> int:
        def make(no: int) -> None:
            self.items[(seller, no)] = AuctionItem(seller, no, title, initial_price, 0, -1, 0)
            self.bids[(seller, no)] = []

        return self._sell(seller, make)

    def sell_sale_item(self, seller: int, title: str, price: int, quantity: int) -> int:
        def make(no: int) -> None:
            self.sales[(seller, no)] = SaleItem(seller, no, title, price, quantity)
            self.purchases[(seller, no)] = []

        return self._sell(seller, make)

    def _bid(self, key: tuple[int, int], bidder: int, amount: int) -> BidAnswer:
        item = self.items[key]
        if amount <= item.max_bid:
            return BidAnswer(item.max_bid, item.bid_count, -1)
        no = item.bid_count
        self.bids[key].append(Bid(*key, no, bidder, amount))
        self.items[key] = item._replace(max_bid=amount, max_bidder=bidder, bid_count=no + 1)
        return BidAnswer(item.max_bid, no, no)

    def store_bid(self, seller: int, item_no: int, bidder: int, amount: int) -> BidAnswer:
        key = (seller, item_no)
        if self.outbid:
            self.outbid -= 1
            item = self.items[key]
            self._bid(key, OTHER_BIDDER, max(item.max_bid, item.initial_price) + 1_000_000)
        self._attempt()
        return self._bid(key, bidder, amount)

    def buy_sale_item(self, seller: int, item_no: int, buyer: int, quantity: int) -> PurchaseAnswer:
        self._attempt()
        key = (seller, item_no)
        sale = self.sales[key]
        if sale.quantity < quantity:
            return PurchaseAnswer(sale.quantity, -1)
        no = len(self.purchases[key])
        self.purchases[key].append(Purchase(*key, no, buyer, quantity))
        self.sales[key] = sale._replace(quantity=sale.quantity - quantity)
        return PurchaseAnswer(sale.quantity, no)

    # -- reads -----------------------------------------------------------------------
    def auction_item(self, seller: int, item_no: int) -> ItemWithBids:
        return ItemWithBids(self.items[(seller, item_no)], list(self.bids[(seller, item_no)]))

    def sale_item(self, seller: int, item_no: int) -> SaleItem:
        return self.sales[(seller, item_no)]

    def auction_items_by_seller(self, seller: int) -> list[AuctionItem]:
        return [i for (s, _), i in sorted(self.items.items()) if s == seller]

    def sale_items_by_seller(self, seller: int) -> list[SaleItem]:
        return [i for (s, _), i in sorted(self.sales.items()) if s == seller]

    def bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        return [
            (b, self.items[k]) for k, bids in self.bids.items() for b in bids if b.bidder == bidder
        ]

    def winning_bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        return [(b, i) for b, i in self.bids_by_bidder(bidder) if i.max_bid == b.amount]

    def purchases_by_buyer(self, buyer: int) -> list[tuple[Purchase, SaleItem]]:
        return [
            (p, self.sales[k]) for k, ps in self.purchases.items() for p in ps if p.buyer == buyer
        ]

    def close(self) -> None:
        pass
