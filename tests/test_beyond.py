"""Beyond the paper's summaries: what the page says follows from its numbers."""


def test_the_compile_gap_text_says_widens_when_compiling_is_slower_than_torch():
    """A negative share of the jax–torch gap closed (torch-compile slower than eager torch) is a
    widening, not a closing of −67 %."""
    import pandas as pd

    from studylib.book.pages import beyond

    rows = [{"num_envs": n, "impl": i, "samples_per_s": v} for n in (16, 256) for i, v in
            (("torch", 100.0), ("torch-compile", 50.0 if n == 16 else 120.0), ("jax", 200.0))]
    gap = beyond.compile_gap(pd.DataFrame(rows))
    text = beyond.compile_gap_text(gap)
    assert list(gap["share of the gap closed"]) == [-0.5, 0.2]
    assert "widens, by **15%** of its size," in text and "at its best N, 2^8, it closes 20%" in text
    slower = beyond.compile_gap(pd.DataFrame([r for r in rows if r["num_envs"] == 16]))
    assert "closes none of it at any N (at best -50%" in beyond.compile_gap_text(slower)
    assert "-50% to 20%, a negative share: slower than eager torch)" in text


def test_the_compile_gap_text_explains_a_negative_share_only_where_there_is_one():
    import pandas as pd

    from studylib.book.pages import beyond

    rows = [{"num_envs": n, "impl": i, "samples_per_s": v} for n in (16, 256) for i, v in
            (("torch", 100.0), ("torch-compile", 105.0 if n == 16 else 109.0), ("jax", 200.0))]
    text = beyond.compile_gap_text(beyond.compile_gap(pd.DataFrame(rows)))
    assert "(median over 2 N; shares 5% to 9%); at its best N, 2^8, it closes 9%." in text and "negative" not in text
