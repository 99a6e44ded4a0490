"""The classifier names of the utility measures (:mod:`dpforge.evaluation.utility`), in a module
of their own so that the command line's help can name them without importing scikit-learn."""

CLASSIFIERS = ("mlp", "lr", "rf", "gb", "svm", "knn", "nb", "dt", "ada", "bag")
"""Classifier names: MLP, logistic regression, random forest, gradient boosting, SVM (RBF kernel,
Platt-scaled probabilities), k-nearest neighbours (k = 5), Gaussian naive Bayes, decision tree,
AdaBoost, bagging of trees. The wider set follows the GS-WGAN paper's average over about a dozen
scikit-learn classifiers; all see the same schema-driven feature encoding."""
