import re

from shakespeare_lm import corpus


def test_rebuild_matches_committed_files_byte_for_byte():
    train, heldout = corpus.build()
    assert corpus.sha256_text(train) == corpus.sha256_file(corpus.TRAIN_FILE)
    assert corpus.sha256_text(heldout) == corpus.sha256_file(corpus.HELDOUT_FILE)


def test_whole_plays_held_out_about_ten_percent():
    train, heldout = corpus.load_train(), corpus.load_heldout()
    share = len(heldout) / (len(train) + len(heldout))
    assert 0.08 <= share <= 0.12
    assert "the-taming-of-the-shrew" in corpus.HELDOUT_PLAYS
    line = "KATHARINA:\nMoved! in good time: let him that moved you hither\n"
    assert line in heldout and line not in train
    assert "PETRUCHIO:" in heldout and "PETRUCHIO:" not in train


def test_every_block_is_speaker_line_speech_blank_line():
    text = corpus.load_heldout()
    assert text.endswith("\n\n")
    blocks = text[:-2].split("\n\n")
    for block in blocks:
        lines = block.split("\n")
        assert re.fullmatch(r"[A-Z][A-Z' ,.&-]*:", lines[0]), lines[0]
        assert len(lines) >= 2 and all(lines[1:])


def test_stage_directions_and_markup_dropped():
    text = corpus.load_train()
    assert set(text) <= set(corpus.ALPHABET)
    for marker in ("Exeunt", "_Enter", "**", "#", "["):
        assert marker not in text or marker == "Exeunt" and "\nExeunt\n" not in text


def test_clean_line_maps_documented_characters():
    assert corpus.clean_line("A messenger?\u2014Lord") == "A messenger?--Lord"
    assert corpus.clean_line('"Ave, Caesar!"') == "'Ave, Caesar!'"
    assert corpus.clean_line("No, no; he'll __\\[Aside]_ go") == "No, no; he'll go"
    assert corpus.speaker_name("First Huntsman") == "FIRST HUNTSMAN"
    assert corpus.speaker_name("ROSENCRANTZ: & GUILDENSTERN:") == "ROSENCRANTZ AND GUILDENSTERN"
