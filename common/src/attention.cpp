// placeholder: implemented in the chapters 04-07 work
