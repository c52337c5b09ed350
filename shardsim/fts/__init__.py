"""Text search (the server's src/mongo/db/fts/): languages, tokenizer, stop words, stemming, the
text index's keys and scores, `$text` queries and their matcher."""
