// placeholder until the chapter is written
int main() { return 0; }
