"""Part IV: occupational gender bias in text-to-image models: resumable generation (`generation`),
annotation (`annotation`), VRBS and Spearman against labour statistics (`bias`), the CADS sampler
(`cads`) and comparisons across samplers (`compare`)."""
