

def test_ended_messages_are_cut_at_a_word_boundary():
    from logforensics._render.report import clip_words

    msg = "Received sigquit from a child process. It usually means the child failed."
    assert clip_words(msg, 70) == "Received sigquit from a child process. It usually means the child…"
    assert clip_words("short", 70) == "short"
