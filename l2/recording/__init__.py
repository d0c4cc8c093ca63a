"""Recording demos from the simulator: the app and env (sim), Isaac Lab's dataset handler and recorder terms
for our schema (handler), camera frame streaming, the collectors' shared loop and command line."""
