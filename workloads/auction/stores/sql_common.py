"""The SQL the PostgreSQL and MySQL Auction bindings share: the tables, the reads (one
statement each, one snapshot; written with PostgreSQL's $n placeholders, which the MySQL
binding turns into its own), and their rows as the protocol's tuples.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from bgbench.errors import StoreError
from bgbench.workloads.auction.store import AuctionItem, Bid, ItemWithBids, Purchase, SaleItem

TABLES = ("auction_users", "auction_items", "sale_items", "auction_bids", "auction_purchases")

ITEM = "i.seller, i.item_no, i.title, i.initial_price, i.max_bid, i.max_bidder, i.bid_count"
SALE = "s.seller, s.item_no, s.title, s.price, s.quantity"
BID = "b.seller, b.item_no, b.bid_no, b.bidder, b.amount"
PURCHASE = "p.seller, p.item_no, p.purchase_no, p.buyer, p.quantity"
ITEM_WITH_BIDS = (
    f"SELECT {ITEM}, b.bid_no, b.bidder, b.amount FROM auction_items i LEFT JOIN auction_bids b "
    "ON b.seller = i.seller AND b.item_no = i.item_no "
)
ONE_ITEM = ITEM_WITH_BIDS + "WHERE i.seller = $1 AND i.item_no = $2 ORDER BY b.bid_no"
ONE_SALE = f"SELECT {SALE} FROM sale_items s WHERE s.seller = $1 AND s.item_no = $2"
ITEMS_BY_SELLER = f"SELECT {ITEM} FROM auction_items i WHERE i.seller = $1 ORDER BY i.item_no"
SALES_BY_SELLER = f"SELECT {SALE} FROM sale_items s WHERE s.seller = $1 ORDER BY s.item_no"
BIDS_BY_BIDDER = (
    f"SELECT {BID}, {ITEM} FROM auction_bids b JOIN auction_items i "
    "ON i.seller = b.seller AND i.item_no = b.item_no WHERE b.bidder = $1"
)
WINNING_BIDS = BIDS_BY_BIDDER + " AND i.max_bidder = b.bidder AND i.max_bid = b.amount"
PURCHASES_BY_BUYER = (
    f"SELECT {PURCHASE}, {SALE} FROM auction_purchases p JOIN sale_items s "
    "ON s.seller = p.seller AND s.item_no = p.item_no WHERE p.buyer = $1"
)
ORDER = " ORDER BY 1, 2, 3"


# -- rows as the protocol's tuples ---------------------------------------------------------
def auction_item(row: Sequence[Any], at: int = 0) -> AuctionItem:
    r = row[at : at + 7]
    return AuctionItem(int(r[0]), int(r[1]), str(r[2]), int(r[3]), int(r[4]), int(r[5]), int(r[6]))


def sale_item(row: Sequence[Any], at: int = 0) -> SaleItem:
    r = row[at : at + 5]
    return SaleItem(int(r[0]), int(r[1]), str(r[2]), int(r[3]), int(r[4]))


def bid(row: Sequence[Any]) -> Bid:
    return Bid(int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]))


def purchase(row: Sequence[Any]) -> Purchase:
    return Purchase(int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]))


def items_with_bids(rows: Iterable[Sequence[Any]]) -> list[ItemWithBids]:
    """Rows of ITEM_WITH_BIDS (item columns, then bid_no, bidder, amount; no bid: NULLs),
    ordered by item and bid, as items with their bids."""
    found: list[ItemWithBids] = []
    for row in rows:
        item = auction_item(row)
        if not found or found[-1].item[:2] != item[:2]:
            found.append(ItemWithBids(item, []))
        if row[7] is not None:
            found[-1].bids.append(
                Bid(item.seller, item.item_no, int(row[7]), int(row[8]), int(row[9]))
            )
    return found


def missing(kind: str, seller: int, item_no: int) -> StoreError:
    return StoreError(f"no {kind} item ({seller}, {item_no}) in the Auction tables")
