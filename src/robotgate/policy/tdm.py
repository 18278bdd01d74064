"""Whether text-and-data-mining rights are reserved for a URL (W3C TDMRep), without I/O.

The report's order of processing: the origin's ``/.well-known/tdmrep.json``
(its rule for the URL's path), then the page's own ``tdm-reservation`` and
``tdm-policy`` headers, then its HTML meta tags; a later technique that says
something overrides an earlier one (the page's two are combined by
:func:`robotgate.robots.directives.page_directives`).  A page that reserves
without naming a policy keeps the file's, and a page naming a policy without
a reservation gives its policy to the file's reservation ("the absence of
tdm-reservation and tdm-policy must not reset current values").  The file is
fetched by robots.txt's flow (redirects, timeouts, freshness, back-off), but its
failures mean what the report says: a server that gives no file, for
whatever reason (4xx, 5xx, network), does not implement the protocol, so the
file says nothing and the page's own statements decide; an earlier good copy
stands in while the file is unreachable, and it is asked again after the back-off.

A reservation governs what the content may be used for, never whether it may
be fetched: that is robots.txt's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import Outcome, RobotsEntry
from ..urls import path_of

if TYPE_CHECKING:
    from ..robots.directives import PageDirectives
    from ..robots.tdmrep import TdmRep

__all__ = ["TDMREP_PATH", "TdmVerdict", "tdm_verdict"]

#: Where an origin states its TDM reservations (W3C TDMRep).
TDMREP_PATH = "/.well-known/tdmrep.json"


@dataclass(frozen=True, slots=True)
class TdmVerdict:
    """Whether TDM rights are reserved for one URL (``None``: nothing says).

    ``policy`` is the URL of the rightsholder's TDM policy, if stated;
    ``source`` says where the answer comes from, or why there is none.
    """

    reserved: bool | None
    policy: str | None
    source: str

    def as_json(self) -> dict[str, object]:
        return {"reserved": self.reserved, "policy": self.policy, "source": self.source}

    def __str__(self) -> str:
        said = {True: "TDM rights reserved", False: "TDM rights not reserved",
                None: "no TDM reservation stated"}[self.reserved]
        policy = f" (policy {self.policy})" if self.policy else ""
        return f"{said}{policy}: {self.source}"


def tdm_verdict(
    url: str,
    entry: RobotsEntry | None,
    tdmrep: TdmRep | None,
    page: PageDirectives | None = None,
) -> TdmVerdict:
    """The verdict for ``url`` from its origin's tdmrep.json fetch (``entry``,
    parsed as ``tdmrep`` when it came) and the page's own directives, if read.

    ``entry`` is None when the file was not asked for (TDMRep not enabled).
    """
    rule = None
    if entry is not None and entry.outcome == Outcome.OK and tdmrep is not None:
        rule = tdmrep.for_path(path_of(url))
    where = entry.origin + TDMREP_PATH if entry is not None else TDMREP_PATH
    if page is not None and page.tdm_reservation is not None:
        said_by = "; ".join(s for s in page.sources if "tdm-" in s) or "tdm-reservation"
        over = " (the page's own statement overrides tdmrep.json)" if entry is not None else ""
        if not page.tdm_reservation:
            return TdmVerdict(False, None, f"the page's {said_by}{over}")
        policy = page.tdm_policy or (rule.policy if rule is not None and rule.reserved else None)
        return TdmVerdict(True, policy, f"the page's {said_by}{over}")
    if rule is not None:
        source = f"{where}: the rule for location {rule.location!r}"
        if entry is not None and entry.failures:
            # An earlier good copy stands in: say so, and why.
            source += f" ({entry.detail})"
        policy = rule.policy if rule.reserved else None
        if rule.reserved and page is not None and page.tdm_policy:
            policy = page.tdm_policy
            source += "; the policy is the page's tdm-policy"
        return TdmVerdict(rule.reserved, policy, source)
    nothing = "the page states no tdm-reservation" if page is not None else (
        "the page was not read")
    if entry is None:
        return TdmVerdict(None, None, nothing)
    if entry.outcome == Outcome.UNREACHABLE:
        file_said = (f"{entry.detail}: tdmrep.json is unreachable, so it says nothing until it "
                     "answers (W3C TDMRep: a server giving no file does not implement it)")
    elif entry.outcome != Outcome.OK:
        file_said = f"{entry.detail}: no {TDMREP_PATH}"
    elif tdmrep is not None and tdmrep.problem:
        file_said = f"{where}: {tdmrep.problem}; no rule for this path"
    else:
        file_said = f"{where} has no rule for this path"
    return TdmVerdict(None, None, f"{file_said}; {nothing}")
