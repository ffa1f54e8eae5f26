"""One basis for the D claims (issue 53 item 6): the verdict reads the basis :data:`basis.BASIS` declares (members net
of non-members for the claims about memorization, raw rates for D6 and D8), the record shows the paper's raw reading
beside a net verdict, and a model without non-members is read raw and says so."""

from __future__ import annotations

from test_llm_claims import D7_RISING, FT, mem_frame, perf_frame, same_in_all_settings, share

from iclmem.chapters.ch06_llm_kshot import BASIS, basis_table
from iclmem.chapters.ch06_llm_kshot.basis import NET, RAW, basis_glue, basis_lead, reads_net
from iclmem.chapters.ch06_llm_kshot.claims import all_claims, claim_d3, claim_d4, claim_d5, claim_d7
from iclmem.chapters.ch06_llm_kshot.glue import claims_glue
from iclmem.chapters.ch06_llm_kshot.rules import ClaimDraws
from iclmem.stats.permutation import NULL_LEVEL

N = 20
MEMBERS = [True] * N + [False] * N
NET_VERDICT = "Verdict on: members net of non-members"
PAPER = "Paper's reading (raw rates of the fine-tuned model, its fine-tuning members)"
ONLY_RAW = "the only reading here: this model has no non-members"


def two(members: int, non_members: int, hit: str = "exact") -> list[str]:
    """N members then N non-members: the given numbers of each memorized (``hit``), the others not."""
    return share(members, hit, n=N) + share(non_members, hit, n=N)


def test_the_basis_is_stated_once_and_read_everywhere():
    assert list(BASIS) == [f"D{i}" for i in range(1, 9)]
    assert {c for c, b in BASIS.items() if b.reading == NET} == {"D1", "D2", "D3", "D4", "D5", "D7"}
    assert {c for c, b in BASIS.items() if b.reading == RAW} == {"D6", "D8"}
    assert all("Sec. 5" in b.why for b in BASIS.values())  # every reason cites the paper's section
    assert reads_net("D1", True) and not reads_net("D1", False) and not reads_net("D6", True)
    with_truth, without = basis_table(True), basis_table(False)
    assert with_truth.loc["D4", "verdict on"] == "members net of non-members"
    assert with_truth.loc["D8", "verdict on"] == without.loc["D4", "verdict on"] == "raw rates, the paper's reading"
    assert basis_glue() == {"claims_basis_net": "D1, D2, D3, D4, D5, D7", "claims_basis_raw": "D6, D8"}
    assert claims_glue([], None)["claims_basis_net"] == "D1, D2, D3, D4, D5, D7"
    assert basis_lead("D3", True).startswith(NET_VERDICT) and ONLY_RAW in basis_lead("D3", False)
    assert "not net of non-members" in basis_lead("D8", True) and "no non-members either" in basis_lead("D8", False)


def test_d3_reads_members_net_of_non_members():
    # members and non-members turn exact alike: the raw count rises (the paper's reading would agree), net it is 0
    alike = mem_frame(same_in_all_settings({10: two(12, 12, "near-exact"), 50: two(12, 12)}), MEMBERS)
    r = claim_d3(alike, FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert r.verdict == "inconclusive" and r.reason.startswith(NET_VERDICT)
    assert "transitions +0 per 100" in r.ours and "raw: 36 near-exact -> exact" in r.ours
    assert PAPER in r.reason and "net transitions +36 transitions, interval [+" in r.reason
    assert "member labels permuted" in r.null and "Newcombe" in r.interval
    # only the members turn exact: net of non-members too, and membership permuted rarely gives as much
    surfaced = claim_d3(mem_frame(same_in_all_settings({10: two(12, 0, "near-exact"), 50: two(12, 0)}), MEMBERS), FT)
    assert surfaced.verdict == "reproduced" and "+60 per 100" in surfaced.ours and surfaced.null_rate <= NULL_LEVEL
    # no non-members: the raw count is the only reading, against its k-order null
    raw = claim_d3(alike.assign(member=True), FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert ONLY_RAW in raw.reason and PAPER not in raw.reason and "k labels" in raw.null


def test_d4_reads_members_net_of_non_members():
    # members memorize 70% in every setting (raw: segment pairs reach the maximum, gap 0); the non-members match 70%
    # only in the segment-pairs setting (a template): net, segment pairs alone surface nothing
    plan = {}
    for s in ("full", "pairs_labels", "pairs_only"):
        plan[(s, 0)], plan[(s, 25)] = two(0, 0), two(14, 14 if s == "pairs_only" else 0)
    r = claim_d4(mem_frame(plan, MEMBERS), FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert r.verdict == "differs" and r.reason.startswith(NET_VERDICT) and "gap -70 points; raw:" in r.ours
    assert "raw: seg. only 70% vs the maximum 70%" in r.ours and "above the presence floor" in r.reason
    assert PAPER in r.reason and "gap +0 points, interval [+0, +0] points: the interval of the gap lies" in r.reason
    assert "members' memorized completions in the only-segment-pairs setting dropped" in r.null
    members_only = mem_frame(plan, MEMBERS).query("member")  # the same members, no non-members: raw, gap 0
    raw = claim_d4(members_only, FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert raw.verdict != "differs" and ONLY_RAW in raw.reason and "presence floor" not in raw.reason


def test_d4_net_equality_keeps_its_thinned_null():
    """40 + 40 instances memorized alike in every setting (members 70%, non-members 0%): the net gap's stratified
    bootstrap is [0, 0], but a build where segment pairs alone fall a margin short ties as often; the null says so."""
    n = 40
    plan = same_in_all_settings({0: share(0, n=2 * n), 25: share(28, n=n) + share(0, n=n)})
    tied = mem_frame(plan, [True] * n + [False] * n)
    r = claim_d4(tied, FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert r.interval.startswith("[+0, +0] points, 95% stratified percentile bootstrap")
    assert r.verdict == "inconclusive" and r.null_rate > NULL_LEVEL and "chance alone" in r.reason


def test_d5_reads_members_net_of_non_members():
    # members: full = segment pairs and labels at k = 25, full higher at k = 0 (raw: the paper's pattern); the
    # non-members match 70% with segment pairs and labels at k = 25 only: net, full surfaces 70 points more there
    plan = {
        ("full", 0): two(14, 0),
        ("pairs_labels", 0): two(0, 0),
        ("full", 25): two(14, 0),
        ("pairs_labels", 25): two(14, 14),
    }
    r = claim_d5(mem_frame(plan, MEMBERS), FT, draws=ClaimDraws(n_boot=200, n_perm=200))
    assert r.verdict == "differs" and r.reason.startswith(NET_VERDICT)
    assert r.ours.startswith("members minus non-members, full minus seg.+labels: +70 points at k = 25")
    assert "raw: full minus seg.+labels: +0 points at k = 25, +70 points at k = 0" in r.ours
    assert PAPER in r.reason and "(a) the interval of the difference at k = 25 lies within +-10 points" in r.reason
    assert r.null.startswith("net of non-members, the larger of two rates")
    raw = claim_d5(
        mem_frame(plan, MEMBERS).query("member"), FT, draws=ClaimDraws(n_boot=200, n_perm=200)
    )  # no non-members: raw
    assert raw.verdict != "differs" and ONLY_RAW in raw.reason and "+0 points at k = 25" in raw.ours


def test_d7_reads_surfaced_memorization_net_of_non_members():
    accuracy = perf_frame({k: share(v, True, False, n=N) * 2 for k, v in D7_RISING.items()}, MEMBERS)
    rising = {0: 0, 10: 6, 25: 12, 50: 18}
    # the non-members rise faster than the members: raw r = 1 with accuracy, net of non-members the curve falls
    alike = mem_frame(same_in_all_settings({k: two(v, min(N, v + v // 2)) for k, v in rising.items()}), MEMBERS)
    r = claim_d7(alike, accuracy, FT, draws=ClaimDraws(n_boot=200, n_perm=200), chance=0.25)
    assert r.verdict == "differs" and r.reason.startswith(NET_VERDICT) and "stratified" in r.interval
    assert "members minus non-members: full r = -0.46" in r.ours and "raw: full r = 1.00" in r.ours
    assert PAPER in r.reason and "3 of 3 settings at or above 0.8" in r.reason
    # only the members' memorization rises: net and raw agree, against the k = 0-kept null on the net series
    surfaced = mem_frame(same_in_all_settings({k: two(v, 0) for k, v in rising.items()}), MEMBERS)
    rs = claim_d7(surfaced, accuracy, FT, draws=ClaimDraws(n_boot=200, n_perm=200), chance=0.25)
    assert rs.verdict == "reproduced" and "members and non-members alike" in rs.null and "k = 0 kept" in rs.null
    raw = claim_d7(
        alike.assign(member=True),
        accuracy.assign(member=True),
        FT,
        draws=ClaimDraws(n_boot=200, n_perm=200),
        chance=0.25,
    )
    assert raw.verdict == "reproduced" and ONLY_RAW in raw.reason and "members minus" not in raw.ours


def test_every_record_says_the_basis_its_verdict_reads():
    rising = {0: 0, 10: 10, 25: 16, 50: 18}
    mem = mem_frame(same_in_all_settings({k: two(v, v // 4) for k, v in rising.items()}), MEMBERS)
    perf = perf_frame({k: share(v, True, False, n=N) * 2 for k, v in D7_RISING.items()}, MEMBERS)
    for truth, frames in ((True, (mem, perf)), (False, (mem.assign(member=True), perf.assign(member=True)))):
        results = all_claims(*frames, FT, None, draws=ClaimDraws(n_boot=100, n_perm=100))
        tested = [r for r in results[:8] if r.verdict != "not testable here"]
        assert len(tested) >= 6
        for r in tested:
            net = reads_net(r.claim_id, truth)
            assert r.reason.startswith(basis_lead(r.claim_id, truth)), r.claim_id
            assert (PAPER in r.reason) == net, r.claim_id  # the raw reading beside a net verdict, not beside a raw one
            assert (ONLY_RAW in r.reason) == (not truth and BASIS[r.claim_id].reading == NET), r.claim_id
