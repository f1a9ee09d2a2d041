"""Part II: ColorFoil (Samin et al. 2024): foil construction (`foils`, `construction`), scoring and
evaluation (`evaluation`), figures (`plots`) and the easy-VQA colour model trained in the book
(`colour_model`)."""
