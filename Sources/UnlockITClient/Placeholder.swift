enum _Placeholder9981 {}
