"""Measuring text: metrics, chapter 4's experiment, chapter 8's subword tokenizer."""
