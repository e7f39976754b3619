"""Plain-text tables line up with Chinese and Japanese: padding counts terminal columns, not characters."""

from __future__ import annotations

import re

import levelfield as lf
from levelfield._core.data.textwidth import ljust, rjust, width
from levelfield.comparison._text import format_comparison


def test_width_counts_wide_characters_twice_and_combining_marks_not_at_all():
    assert width("abc") == 3
    assert width("状态查询") == 8  # Chinese: wide
    assert width("ｶﾀｶﾅ") == 4  # half-width katakana: narrow
    assert width("ＡＢ") == 4  # full-width Latin: wide
    assert width("Wetter über") == 11  # Latin with a precomposed umlaut
    assert width("u\u0308ber") == 4  # a combining diaeresis takes no column
    assert width("ação") == 4
    assert ljust("天气", 6) == "天气  " and rjust("天气", 6) == "  天气"
    assert ljust("too long", 3) == "too long"  # never cut


def test_a_comparison_of_agents_with_chinese_and_japanese_names_lines_up():
    cases = [{"prompt": f"问题 {i}", "reference": f"答案 {i}"} for i in range(6)]
    agents = {"天气助手": lambda p: p.replace("问题", "答案"), "エージェント": lambda p: "わかりません"}
    cmp = lf.compare(cases, agents, ["exact_match"], progress=False)
    lines = format_comparison(cmp).splitlines()
    header = next(line for line in lines if "天气助手" in line and "エージェント" in line)
    row = next(line for line in lines if line.startswith("exact_match"))
    # Each agent's column ends where its name ends, in terminal columns (cells are right-aligned).
    def ends(line: str) -> list[int]:
        return [width(line[: m.end()]) for m in re.finditer(r"\S+(?: \S+)*", line)][-2:]

    assert ends(header) == ends(row)
