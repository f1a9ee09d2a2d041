"""Part IV: occupational gender bias in text-to-image models: resumable generation (`generation`),
annotation (`annotation`), VRBS and Spearman against labour statistics (`bias`), one cached study per
model and setting (`study`), the CADS sampler (`cads`), comparisons across samplers (`compare`), the
findings box's claims against their controls (`findings`) and the power of the planted contrasts (`power`)."""
