// placeholder until the exercises are written
namespace ex03 {}
