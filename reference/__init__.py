"""The hidden side of each challenge, one package per problem (reference/<id with _ for ->/), never
shipped to candidates: see docs/challenges.md, "A challenge package"."""
