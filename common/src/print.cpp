// placeholder: implemented in the foundation work
