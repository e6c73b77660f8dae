"""How a distribution becomes text: the rules, the sampler and the decoders."""
