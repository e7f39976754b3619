"""What tokens cost in dollars: the user's own price table first, else the ``genai-prices`` package.

A price table maps a model name to dollars per million tokens::

    {"my-model": {"input_per_mtok": 0.15, "output_per_mtok": 0.60,
                  "cache_read_per_mtok": 0.075, "cache_write_per_mtok": 0.1875, "reasoning_per_mtok": 0.60}}

given as a dict or as a JSON file (``RunConfig(prices=...)``, ``--prices FILE``). Models the
table does not name are priced by ``genai-prices`` (``pip install 'levelfield[cost]'``), a
maintained table of providers' prices, imported only when a cost is asked for. A model neither
knows is never priced at zero: its cost is unknown (NaN) and the note says which model it is.

Usage is priced as the provider bills it: the prompt tokens read from cache at the cache-read
price, those written to it at the cache-write price, the rest of the prompt at the input price;
reasoning tokens at the reasoning price where a model has one, else as output. A price table's
three optional keys give those prices (a missing one: the input or output price).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:  # annotations only: the command line reads prices without loading pydantic
    from .types import AgentRun, Usage

__all__ = ["PRICE_KEYS", "OPTIONAL_PRICE_KEYS", "PriceTable", "Cost", "price_table", "usage_cost", "total_cost", "cost_note", "NO_COST", "genai_prices_available"]

PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
"""The two prices every model of a price table has, in dollars per million tokens."""

OPTIONAL_PRICE_KEYS = ("cache_read_per_mtok", "cache_write_per_mtok", "reasoning_per_mtok")
"""Prices a model of a price table may have: cache reads and writes (else the input price) and
reasoning tokens (else the output price), in dollars per million tokens."""

PriceTable = dict[str, dict[str, float]]
"""Model name -> ``{"input_per_mtok": ..., "output_per_mtok": ...[, "cache_read_per_mtok": ...]}``."""

_EXTRA_HINT = "install levelfield[cost] (genai-prices) for the prices of known models, or pass prices={...} or --prices FILE"


def price_table(prices: Mapping[str, Any] | str | Path | None) -> PriceTable:
    """A checked price table from a dict or a JSON file; a negative, missing or non-numeric
    price is a ConfigError naming the model (and the file)."""
    if prices is None:
        return {}
    where = ""
    if isinstance(prices, (str, Path)):
        path = Path(prices)
        where = f"{path}: "
        try:
            prices = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"prices={str(path)!r}: no such file (expected a JSON object of model -> prices)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{where}cannot read the price table ({exc})") from None
    if not isinstance(prices, Mapping):
        raise ConfigError(f"{where}prices must map model names to {{'input_per_mtok': ..., 'output_per_mtok': ...}}, "
                          f"got {type(prices).__name__}")
    table: PriceTable = {}
    for model, entry in prices.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}prices for model {model!r}: expected {{'input_per_mtok': ..., "
                              f"'output_per_mtok': ...}}, got {entry!r}")
        unknown = sorted(set(entry) - set(PRICE_KEYS) - set(OPTIONAL_PRICE_KEYS))
        if unknown:
            raise ConfigError(f"{where}prices for model {model!r}: unknown key(s) {', '.join(map(repr, unknown))}; "
                              f"the keys are {', '.join(PRICE_KEYS)} and optionally {', '.join(OPTIONAL_PRICE_KEYS)} "
                              "(dollars per million tokens)")
        row: dict[str, float] = {}
        for key in PRICE_KEYS + tuple(k for k in OPTIONAL_PRICE_KEYS if k in entry):
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"{where}prices for model {model!r}: {key}={value!r} must be a number >= 0 "
                                  "(dollars per million tokens)")
            row[key] = float(value)
        table[str(model)] = row
    return table


@dataclass(frozen=True)
class Cost:
    """Dollars spent, or NaN with the reasons it is unknown (``unpriced``: models without a price;
    ``unnamed``: tokens whose model nobody reported)."""

    usd: float
    unpriced: tuple[str, ...] = ()
    unnamed: bool = False
    reported: bool = True
    """False when no usage was reported at all (nothing to price, and nothing to say why)."""

    @property
    def known(self) -> bool:
        return not math.isnan(self.usd)


NO_COST = Cost(math.nan, reported=False)
"""The cost of a run that reported no usage at all."""


def usage_cost(usage: Usage | None, table: PriceTable) -> Cost:
    """What ``usage`` cost: each model's tokens at the table's price, else genai-prices'."""
    if usage is None:
        return NO_COST
    total = 0.0
    unpriced: list[str] = []
    for model, share in usage.model_shares().items():
        price = _price(model, share, table)
        if price is None:
            unpriced.append(model)
        else:
            total += price
    unnamed = usage.unnamed_tokens() > 0
    if unpriced or unnamed:
        return Cost(math.nan, tuple(sorted(unpriced)), unnamed)
    return Cost(total)


def agent_usage(run: AgentRun) -> Usage | None:
    """The tokens the agent spent in ``run``: every turn of a conversation; a failed run's partial
    output's too, since those tokens were spent."""
    if run.conversation is not None:
        return run.conversation.agent_usage
    out = run.output or run.partial_output
    return out.usage if out is not None else None


def run_spend(run: AgentRun, table: PriceTable) -> Cost:
    """What ``run`` cost in all: the agent's tokens and the simulated user's (what a budget counts)."""
    agent = agent_usage(run)
    simulator = run.conversation.simulator_usage if run.conversation is not None else None
    if simulator is None:
        return usage_cost(agent, table)
    return usage_cost(simulator + agent, table)


def _price(model: str, usage: Usage, table: PriceTable) -> float | None:
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
              usage.reasoning_tokens)
    own = table.get(model)
    if own is not None:
        return _own_price(own, *counts)
    return _library_price(model, *counts)


def _own_price(own: Mapping[str, float], input_tokens: int, output_tokens: int, cache_read: int | None,
               cache_write: int | None, reasoning: int | None) -> float:
    """A price-table row's price: each part at its own price, the rest at the input/output price."""
    read, write, thought = cache_read or 0, cache_write or 0, reasoning or 0
    dollars = ((input_tokens - read - write) * own["input_per_mtok"]
               + read * own.get("cache_read_per_mtok", own["input_per_mtok"])
               + write * own.get("cache_write_per_mtok", own["input_per_mtok"])
               + (output_tokens - thought) * own["output_per_mtok"]
               + thought * own.get("reasoning_per_mtok", own["output_per_mtok"]))
    return dollars / 1e6


@functools.lru_cache(maxsize=4096)
def _library_price(model: str, input_tokens: int, output_tokens: int, cache_read: int | None = None,
                   cache_write: int | None = None, reasoning: int | None = None) -> float | None:
    try:
        import genai_prices
    except ImportError:
        return None
    # genai-prices reads cache and reasoning tokens as parts of input and output, as Usage does.
    usage = genai_prices.Usage(input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cache_read,
                               cache_write_tokens=cache_write, output_reasoning_tokens=reasoning)
    for ref, provider in _lookups(model):
        try:
            return float(genai_prices.calc_price(usage, ref, provider_id=provider).total_price)
        except LookupError:
            continue
    return None


def _lookups(model: str) -> list[tuple[str, str | None]]:
    """Ways to look a model name up: as given, then ``provider:model`` / ``provider/model`` split,
    then without a ``models/`` prefix (Gemini's API reports ``models/gemini-...``)."""
    out: list[tuple[str, str | None]] = [(model, None)]
    for sep in (":", "/"):
        provider, found, name = model.partition(sep)
        if found and provider and name:
            out += [(name, provider), (name, None)]
    return out


@functools.lru_cache(maxsize=1)
def genai_prices_available() -> bool:
    """Whether the genai-prices package is installed."""
    import importlib.util

    return importlib.util.find_spec("genai_prices") is not None


def total_cost(costs: Iterable[Cost]) -> tuple[float, float, int]:
    """(sum, mean, count) of the costs that were reported; NaN when any of them is unknown (a
    partial sum would understate what was spent)."""
    reported = [c for c in costs if c.reported]
    if not reported:
        return math.nan, math.nan, 0
    if not all(c.known for c in reported):
        return math.nan, math.nan, len(reported)
    total = math.fsum(c.usd for c in reported)
    return total, total / len(reported), len(reported)


def cost_note(costs: Iterable[Cost]) -> str | None:
    """Why some costs are unknown, in one line naming the models; None when every cost is known."""
    costs = list(costs)
    unpriced = sorted({m for c in costs for m in c.unpriced})
    unnamed = any(c.unnamed for c in costs)
    parts = []
    if unpriced:
        hint = "pass prices={...} or --prices FILE" if genai_prices_available() else _EXTRA_HINT
        parts.append(f"no price known for model(s) {', '.join(map(repr, unpriced))} ({hint})")
    if unnamed:
        parts.append("some tokens were reported without the model that spent them")
    return "; ".join(parts) if parts else None
