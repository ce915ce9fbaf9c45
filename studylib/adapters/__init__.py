"""Other APIs over the implementations: gymnasium's vector and single-env interfaces
(``gym_vector``) and gymnax-style pure functions (``jax_functional``)."""
