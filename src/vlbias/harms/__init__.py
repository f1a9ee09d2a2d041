"""Part III: representation harms: stereotyping, erasure and toxicity (`measures`), WEAT (`weat`) on
word and sentence vectors (`word_vectors`), the chapter's simulated mode (`chapter`) and figures (`plots`)."""
